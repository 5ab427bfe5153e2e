import crypto from 'node:crypto';
import type https from 'node:https';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { Kernel } from '../kernel/kernel.ts';
import type { Orm } from '../db/orm.ts';
import { pendingMigrations } from '../db/orm.ts';
import { handleError, sendError } from './envelope.ts';
import { apiKeyAuth, internalMountGuard } from './auth.ts';
import { registerOperations } from './operations.ts';
import { acceptPlainHttpFromProxy, transportGuard } from './transport.ts';
import { buildTools } from '../mcp/tools.ts';
import { registerMcp } from '../mcp/route.ts';

export interface AppOptions {
  kernel: Kernel;
  orm: Orm;
  tls: { cert: string; key: string };
  /** A pino logger; omitted, the app logs nothing (tests). */
  logger?: FastifyBaseLogger;
}

const GATED_PREFIXES = ['/api/v1', '/api/beta', '/mcp', '/docs'];
const startsWithSegment = (url: string, prefix: string) => url === prefix || url.startsWith(prefix + '/') || url.startsWith(prefix + '?');

/** Builds the HTTPS application: transport guard, mounts, auth, operations, MCP and docs. */
export async function buildApp(opts: AppOptions): Promise<FastifyInstance> {
  const { kernel, orm } = opts;
  const { config } = kernel.services;
  const app = Fastify({
    https: { cert: opts.tls.cert, key: opts.tls.key },
    ...(opts.logger ? { loggerInstance: opts.logger } : { logger: false }),
    genReqId: () => crypto.randomUUID(),
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    ajv: {
      // Report every violation at once, and accept `?sort=a` as a one-element array.
      customOptions: { allErrors: true, coerceTypes: 'array', removeAdditional: true, useDefaults: true },
    },
  });
  if (config.trustProxy) acceptPlainHttpFromProxy(app.server as https.Server);

  app.addHook('onRequest', transportGuard(config.trustProxy));
  app.addHook('onRequest', async (request, reply) => {
    if (!config.enterprise && GATED_PREFIXES.some((p) => startsWithSegment(request.url, p))) {
      return sendError(request, reply, 404, `Route ${request.method} ${request.url.split('?')[0]} not found`);
    }
    if (startsWithSegment(request.url, '/api/beta')) {
      // The beta mount is deprecated: name its successor on every response.
      const successor = '/api/v1' + request.url.slice('/api/beta'.length).split('?')[0];
      reply.header('deprecation', 'true');
      reply.header('link', `<${successor}>; rel="successor-version"`);
    }
  });
  app.setErrorHandler(handleError);
  app.setNotFoundHandler((request, reply) => sendError(request, reply, 404, `Route ${request.method} ${request.url.split('?')[0]} not found`));

  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'Lab Data Service public API',
        version: '1.0.0-beta',
        description: 'Projects, studies, assays and their records. Every request needs an API key.',
      },
      servers: [{ url: '/' }],
      components: {
        securitySchemes: {
          ApiKey: { type: 'apiKey', in: 'header', name: 'X-API-KEY' },
          ApiKeyAuthorization: { type: 'apiKey', in: 'header', name: 'Authorization', description: 'ApiKey <key>' },
        },
      },
      security: [{ ApiKey: [] }, { ApiKeyAuthorization: [] }],
    },
    // Only the public v1 surface is documented (not the beta alias, /mcp, /docs or probes).
    transform: ({ schema, url }) => ({ schema: { ...schema, hide: schema?.hide || !startsWithSegment(url, '/api/v1') }, url }),
  });

  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema: { hide: true } }, async (request, reply) => {
    try {
      await orm.em.fork().execute('select 1');
      if ((await pendingMigrations(orm)) > 0) return sendError(request, reply, 503, 'Migrations are pending');
    } catch {
      return sendError(request, reply, 503, 'Database unreachable');
    }
    return { status: 'ready' };
  });

  const auth = apiKeyAuth(orm);
  for (const [prefix, hidden] of [['/api/v1', false], ['/api/beta', true]] as const) {
    await app.register(
      async (api) => {
        api.addHook('onRequest', auth);
        // Unknown routes under the mount are authenticated too: no probing without a key.
        api.setNotFoundHandler({ preHandler: auth }, (request, reply) =>
          sendError(request, reply, 404, `Route ${request.method} ${request.url.split('?')[0]} not found`),
        );
        registerOperations(api, { reads: kernel.reads, writes: kernel.writes, orm, services: kernel.services, hidden });
      },
      { prefix },
    );
  }
  await app.register(
    async (internal) => {
      internal.addHook('onRequest', internalMountGuard);
      internal.all('/', { schema: { hide: true } }, async () => undefined);
      internal.all('/*', { schema: { hide: true } }, async () => undefined);
    },
    { prefix: '/api/i' },
  );

  registerMcp(app, { tools: buildTools(kernel.reads), orm, services: kernel.services, allowedHosts: config.mcpAllowedHosts, auth });

  await app.register(async (docs) => {
    docs.addHook('onRequest', auth);
    docs.get('/docs/api-docs/public-v1', { schema: { hide: true } }, async () => app.swagger());
    await docs.register(swaggerUi, { routePrefix: '/docs/swagger-ui', uiConfig: { url: '/docs/api-docs/public-v1' } as never });
  });
  return app;
}
