import Fastify, { type FastifyBaseLogger, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { Kernel } from '../../core/kernel/kernel.ts';
import type { Orm } from '../../core/db/orm.ts';
import { pendingMigrations } from '../../core/db/orm.ts';
import { OUTAGE_RETRY_AFTER } from './database-failure.ts';
import { handleError, routeNotFound, sendError } from './envelope.ts';
import { apiKeyAuth, internalMountGuard } from './auth.ts';
import { echoRequestId, requestId } from './request-id.ts';
import { registerJsonParser } from './json-body.ts';
import { RateLimiter } from './rate-limit.ts';
import { registerRecordConventions } from './record-routes.ts';
import { AuthCache } from './auth-cache.ts';
import { OrganizationUserCache } from './organization-users.ts';
import { registerOperations } from './operations.ts';
import { serializerCompiler, validatorCompiler } from './compilers.ts';
import { clientErrorResponse, proxyTransportGuard, tlsServerFactory } from './transport.ts';
import { buildTools } from '../mcp/tools.ts';
import { mcpAllowedHosts, registerMcp } from '../mcp/route.ts';
import { registerMetrics } from './metrics.ts';
import { openapiOptions } from './openapi.ts';
import { RequestLogController } from './request-log.ts';
import { isBeta, rewriteBetaUrl, safeDecode, successorOf } from './beta-alias.ts';
import { trackHandlers } from './in-flight.ts';
import { databaseTopology } from '../config.ts';
import { FENCE_CHANNEL, ReadReplicas } from '../db/replicas.ts';
import type { NativePool } from '../../core/db/sql.ts';

export interface AppOptions {
  kernel: Kernel;
  orm: Orm;
  tls: { cert: string; key: string };
  /** A pino logger; omitted, the app logs nothing (tests). */
  logger?: FastifyBaseLogger;
}

const GATED_PREFIXES = ['/api/v1', '/mcp', '/docs'];
const notFound = routeNotFound;
const startsWithSegment = (url: string, prefix: string) => url === prefix || url.startsWith(prefix + '/') || url.startsWith(prefix + '?');

/**
 * The gated mount a request is routed to, judged by the route the router matched, not by the
 * raw URL: the router decodes percent-escapes, so `/%61pi/v1/projects` reaches /api/v1 and
 * must be gated and marked exactly like `/api/v1/projects`.
 */
function mountOf(request: FastifyRequest): string | undefined {
  const route = request.routeOptions.url;
  if (route !== undefined) return GATED_PREFIXES.find((prefix) => startsWithSegment(route, prefix));
  return mountOfUrl(request.url);
}

/**
 * Not-found routes (a mount's own included) and URLs the router refused carry no pattern:
 * compare segment by segment, each decoded as the router decodes it (an encoded "/" stays
 * inside its segment).
 */
function mountOfUrl(url: string, prefixes = GATED_PREFIXES): string | undefined {
  const segments = url.split('?')[0].split('/').map(safeDecode);
  return prefixes.find((prefix) => prefix.split('/').every((s, i) => segments[i] === s));
}

/** Builds the HTTPS application: transport guard, mounts, auth, operations, MCP and docs. */
export async function buildApp(opts: AppOptions): Promise<FastifyInstance> {
  const { kernel, orm } = opts;
  const { config } = kernel.services;
  // Set once the mounts exist; the router's own refusals (below) authenticate with it too.
  let auth: ReturnType<typeof apiKeyAuth> | undefined;
  /**
   * The router refuses some URLs before any hook runs (a path parameter over 100 characters:
   * 414; malformed percent-encoding: 400). Answering those at once would tell a caller without
   * a key which routes exist, so the mount's rules come first: 404 off the Enterprise tier,
   * then the key (401), and only then the envelope.
   */
  async function routerRefusal(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
    try {
      await echoRequestId(request, reply);
      const mount = mountOfUrl(request.url);
      if (mount && !config.enterprise) return notFound(request, reply);
      if (mountOfUrl(request.url, ['/api/i'])) return await internalMountGuard(request, reply);
      if (mount && auth) {
        await auth(request, reply);
        if (reply.sent) return;
      }
      const tooLong = error.code === 'FST_ERR_MAX_PARAM_LENGTH';
      return sendError(request, reply, tooLong ? 414 : 400, tooLong ? 'A path segment is longer than 100 characters' : 'The URL is malformed (bad percent-encoding)');
    } catch (err) {
      return handleError(err as FastifyError, request, reply);
    }
  }
  const requestLog = new RequestLogController();
  const app = Fastify({
    // The factory makes an https.Server; Fastify's types expect the http.Server default.
    serverFactory: tlsServerFactory(opts.tls, config.trustProxy) as never,
    clientErrorHandler: clientErrorResponse,
    ...(opts.logger ? { loggerInstance: opts.logger } : { logger: false }),
    // The caller's X-Request-Id when safe, else a UUID: in every log line (reqId) and echoed.
    genReqId: requestId,
    frameworkErrors: routerRefusal as never,
    return503OnClosing: true,
    forceCloseConnections: 'idle',
    // One line per request, its URL redacted (request-log.ts).
    logController: requestLog,
    rewriteUrl: rewriteBetaUrl,
  });
  // Before any route: shutdown waits for every handler, not only for connections.
  app.decorate('handlersSettled', trackHandlers(app).settled);
  // Reads that wait (a long poll) hear of the shutdown here and answer at once.
  const closing = new AbortController();
  app.addHook('preClose', async () => closing.abort());
  app.setValidatorCompiler(validatorCompiler());
  app.setSerializerCompiler(serializerCompiler());
  app.addHook('onRequest', echoRequestId);
  if (config.trustProxy) app.addHook('onRequest', proxyTransportGuard);
  app.addHook('onRequest', async (request, reply) => {
    // A response that never finishes (the client hung up mid-body or while the handler ran) gets its line here.
    reply.raw.once('close', () => {
      if (!reply.raw.writableFinished) requestLog.requestAborted(request);
    });
    const mount = mountOf(request);
    if (!config.enterprise && mount) return notFound(request, reply);
    // Answers for one key: no shared cache may keep them (the key travels in X-API-KEY, which
    // HTTP caches do not treat as credentials). ETags still serve conditional requests.
    if (mount) reply.header('cache-control', 'no-store');
    if (isBeta(request)) {
      // The beta mount is deprecated: name its successor on every response.
      reply.header('deprecation', 'true');
      reply.header('link', `<${successorOf(request)}>; rel="successor-version"`);
    }
  });
  // Requests are JSON only (spec: content type): any other body is 415, not a string to validate.
  app.removeContentTypeParser('text/plain');
  // Over-deep JSON is refused before anything parses or walks it (400); over-large is 413.
  registerJsonParser(app);
  app.setErrorHandler(handleError);
  app.setNotFoundHandler(notFound);

  await app.register(swagger, openapiOptions(kernel));

  app.get('/healthz', { schema: { hide: true } }, async () => ({ status: 'ok' }));
  // Keys are cached per instance and dropped on the database's notifications (app/http/auth-cache.ts),
  // heard on a direct connection to the primary (a pooler in transaction mode drops LISTEN).
  const topology = databaseTopology(config.settings);
  let replicas: ReadReplicas | undefined;
  const authCache = new AuthCache(topology.directUrl ?? orm.config.get('clientUrl')!, opts.logger, {
    [FENCE_CHANNEL]: (payload) => replicas?.fenceMessage(payload),
  });
  await authCache.start();
  // A feed's users from memory, dropped on the same notifications (app/http/organization-users.ts).
  kernel.services.organizationUsers = new OrganizationUserCache(authCache);
  app.addHook('onClose', async () => authCache.close());
  if (topology.readUrls.length) {
    const primary = (await orm.em.getConnection().getNativeClient()) as unknown as NativePool;
    replicas = new ReadReplicas({ primary, urls: topology.readUrls, maxLagMs: topology.readMaxLagMs, sync: () => authCache.sync(), log: opts.logger });
    await replicas.start();
    app.addHook('onClose', async () => replicas!.stop());
  }

  app.get('/readyz', { schema: { hide: true } }, async (request, reply) => {
    // Not ready yet: worth asking again shortly, as every other 503 of an outage says.
    const notReady = (message: string) => sendError(request, reply.header('retry-after', String(OUTAGE_RETRY_AFTER)), 503, message);
    try {
      await orm.em.fork().execute('select 1');
      if ((await pendingMigrations(orm)) > 0) return notReady('Migrations are pending');
    } catch {
      return notReady('Database unreachable');
    }
    // Each database: the primary (through the pooler, when there is one) and the standbys with their lag.
    const databases = [
      { name: 'primary', role: 'primary', up: true, ...(topology.pooled ? { via: 'pooler (transaction mode)' } : {}) },
      ...(replicas?.status() ?? []).map((s) => ({ ...s, role: 'standby' })),
    ];
    return { status: 'ready', databases };
  });
  // Per key and per instance, in memory (docs/api.md, "Rate limits"); 0 turns it off.
  const limiter = config.rateLimitPerMinute > 0 ? new RateLimiter(config.rateLimitPerMinute) : undefined;
  const authHook = (auth = apiKeyAuth(orm, authCache, limiter));
  registerMetrics(app, { orm, services: kernel.services, auth: authHook, replicas });
  await app.register(
    async (api) => {
      api.addHook('onRequest', authHook);
      // Unknown routes under the mount are authenticated too (the mount's onRequest hooks run
      // for its own not-found handler): no probing without a key.
      api.setNotFoundHandler(notFound);
      // ETag/If-Match/Location attach as the operations' routes are declared.
      registerRecordConventions(api, { reads: kernel.reads, writes: kernel.writes, orm, services: kernel.services });
      registerOperations(api, { reads: kernel.reads, writes: kernel.writes, orm, services: kernel.services, replicas, closing: closing.signal });
    },
    { prefix: '/api/v1' },
  );
  await app.register(
    async (internal) => {
      internal.addHook('onRequest', internalMountGuard);
      internal.all('/', { schema: { hide: true } }, async () => undefined);
      internal.all('/*', { schema: { hide: true } }, async () => undefined);
    },
    { prefix: '/api/i' },
  );

  registerMcp(app, { tools: buildTools(kernel.reads), orm, services: kernel.services, allowedHosts: mcpAllowedHosts(config), auth: authHook, replicas });

  await app.register(
    async (docs) => {
      docs.addHook('onRequest', authHook);
      // As under /api/v1: without a key, nothing under /docs (not even what does not exist) answers.
      docs.setNotFoundHandler(notFound);
      docs.get('/api-docs/public-v1', { schema: { hide: true } }, async () => app.swagger());
      // The explorer lives at /docs/swagger-ui (spec), without a trailing slash: its page must
      // name its assets with the /docs prefix, which the plugin cannot see from inside this scope.
      await docs.register(swaggerUi, {
        routePrefix: '/swagger-ui',
        indexPrefix: '/docs',
        // `urls` (the spec's group) rather than `url`, which the plugin overrides with its own
        // copy at a page-relative address that a query string on the page breaks.
        uiConfig: { urls: [{ url: '/docs/api-docs/public-v1', name: 'public-v1' }], 'urls.primaryName': 'public-v1', persistAuthorization: false, displayRequestDuration: true } as never,
        // The plugin's policy (its own scripts only, no framing by other sites), except that the
        // UI sets inline styles as it renders, which style hashes would block.
        staticCSP: true,
        transformStaticCSP: (policy: string) => policy.replace(/style-src [^;]*;/, "style-src 'self' 'unsafe-inline';"),
      });
    },
    { prefix: '/docs' },
  );
  return app;
}
