import { isIP } from 'node:net';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { HttpError, ValidationError } from '../errors.ts';
import type { Orm } from '../db/orm.ts';
import { databaseFailure, OUTAGE_RETRY_AFTER, type DatabaseFailure } from '../db/errors.ts';
import type { KernelServices } from '../kernel/services.ts';
import { executeRead, operationContext } from '../http/operations.ts';
import type { Actor } from '../auth/api-keys.ts';
import type { ToolEntry } from './tools.ts';

const errorResult = (text: string): CallToolResult => ({ isError: true, content: [{ type: 'text', text }] });

async function callTool(entry: ToolEntry, args: unknown, actor: Actor, orm: Orm, services: KernelServices, log: FastifyRequest['log']): Promise<CallToolResult> {
  const checked = entry.validate(args ?? {});
  if (!checked.valid) return errorResult(`Invalid arguments for ${entry.tool.name}: ${checked.errorMessage}`);
  try {
    const result = await executeRead(entry.read, operationContext(actor, orm, services, log), entry.input(checked.data));
    const text = entry.serialize(result);
    return { content: [{ type: 'text', text }], structuredContent: JSON.parse(text) };
  } catch (err) {
    // Client errors are normal tool results the agent can act on: not found (including "not
    // viewable" and other organizations), forbidden, invalid input with its field messages.
    if (err instanceof ValidationError && err.errors.length > 0) {
      return errorResult(`${err.message}: ${err.errors.map((e) => `${e.field}: ${e.message}`).join('; ')}`);
    }
    if (err instanceof HttpError && err.statusCode < 500) return errorResult(err.message);
    const failure = databaseFailure(err);
    if (failure?.status === 503) {
      // Not the tool's answer but the service's state: a JSON-RPC error the client may retry.
      log.warn({ err, tool: entry.tool.name }, 'tool call failed: database unavailable');
      throw unavailable(failure);
    }
    if (failure) return errorResult(failure.message);
    // Anything else may carry SQL or internals: log it, tell the agent only that it failed.
    log.error({ err, tool: entry.tool.name }, 'tool call failed');
    return errorResult('Internal error while running the tool');
  }
}

/** JSON-RPC server error for "try again later" (the range -32000 to -32099 is the server's own). */
const UNAVAILABLE_CODE = -32001;

function unavailable(failure: DatabaseFailure) {
  const data = { retryAfter: failure.retryAfter ?? OUTAGE_RETRY_AFTER };
  return Object.assign(new Error(`Service unavailable: ${failure.message}`), { code: UNAVAILABLE_CODE, data });
}

/** The lower-case host name of a Host header or Origin value (no port, no IPv6 brackets). */
function hostName(value: string | undefined): string | undefined {
  if (!value) return undefined;
  try {
    return new URL(value.includes('://') ? value : `http://${value}`).hostname.replace(/^\[|\]$/g, '').toLowerCase();
  } catch {
    return undefined;
  }
}

/**
 * DNS rebinding makes a browser send a foreign *name* (the attacker's domain, now resolving to
 * us) as Host and Origin. So Host must be a known name (localhost or LABDATA_MCP_ALLOWED_HOSTS)
 * or an IP literal, which rebinding cannot produce; Origin, when present, must be a known name
 * or the request's own host.
 */
function rebindingSafe(headers: FastifyRequest['headers'], allowed: Set<string>): boolean {
  const host = hostName(headers.host);
  if (!host || !(allowed.has(host) || isIP(host) !== 0)) return false;
  if (headers.origin === undefined) return true;
  const origin = hostName(headers.origin);
  return origin !== undefined && (allowed.has(origin) || origin === host);
}

/** The JSON-RPC error for a request Fastify refused before the MCP transport saw it. */
function jsonRpcError(status: number, fastifyCode: string | undefined): { code: number; message: string } {
  if (status === 400 && fastifyCode?.startsWith('FST_ERR_CTP_')) return { code: -32700, message: 'Parse error: the body is not valid JSON' };
  if (status === 413) return { code: -32600, message: 'Invalid Request: the body is too large' };
  if (status === 415) return { code: -32000, message: 'Unsupported Media Type: Content-Type must be application/json' };
  if (status < 500) return { code: -32600, message: 'Invalid Request' };
  return { code: -32603, message: 'Internal error' };
}

const notAllowed = { jsonrpc: '2.0', error: { code: -32000, message: 'Method not allowed: this endpoint is stateless; POST JSON-RPC requests' }, id: null };

/**
 * POST /mcp: Streamable HTTP in stateless mode (a fresh server and transport per request), so
 * any instance can answer any request. Auth runs in the caller-supplied onRequest hook.
 */
export function registerMcp(
  app: FastifyInstance,
  opts: { tools: Map<string, ToolEntry>; orm: Orm; services: KernelServices; allowedHosts: string[]; auth: (req: FastifyRequest, reply: FastifyReply) => Promise<unknown> },
) {
  const allowed = new Set(['localhost', ...opts.allowedHosts.map((h) => hostName(h) ?? h.toLowerCase())]);
  const toolList = [...opts.tools.values()].map((e) => e.tool);

  app.register(async (mcp) => {
    // DNS-rebinding protection: a browser tricked into calling us carries a foreign Host/Origin.
    mcp.addHook('onRequest', async (request, reply) => {
      if (!rebindingSafe(request.headers, allowed)) {
        return reply.code(403).send();
      }
    });
    mcp.addHook('onRequest', opts.auth);
    // Body parse errors are JSON-RPC errors on this endpoint, not the REST envelope.
    mcp.setErrorHandler(async (error: { statusCode?: number; code?: string }, request, reply) => {
      // The database lost while authenticating: 503 and `Retry-After`, still a JSON-RPC error.
      const failure = databaseFailure(error);
      if (failure?.status === 503) {
        request.log.warn({ err: error }, 'MCP request failed: database unavailable');
        const { code, message, data } = unavailable(failure);
        reply.header('retry-after', String(data.retryAfter));
        return reply.code(503).send({ jsonrpc: '2.0', error: { code, message, data }, id: null });
      }
      const status = error.statusCode && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 500;
      if (status === 500) request.log.error({ err: error }, 'MCP request failed');
      return reply.code(status).send({ jsonrpc: '2.0', error: jsonRpcError(status, error.code), id: null });
    });
    // No SSE stream and no session: a GET handed to the transport would stay open forever.
    mcp.route({
      method: ['GET', 'DELETE', 'PUT', 'PATCH'],
      url: '/mcp',
      schema: { hide: true },
      handler: async (_req, reply) => reply.code(405).header('allow', 'POST').send(notAllowed),
    });
    mcp.post('/mcp', { schema: { hide: true } }, async (request, reply) => {
      const actor = request.actor!;
      const server = new McpServer({ name: 'labdata', version: '0.1.0' });
      server.server.registerCapabilities({ tools: { listChanged: false } });
      server.server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: toolList }));
      server.server.setRequestHandler(CallToolRequestSchema, async (req) => {
        const entry = opts.tools.get(req.params.name);
        if (!entry) throw Object.assign(new Error(`Unknown tool: ${req.params.name}`), { code: -32602 });
        return callTool(entry, req.params.arguments, actor, opts.orm, opts.services, request.log);
      });
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      // Hijacked replies bypass Fastify's header handling: copy what the hooks set (HSTS, ...).
      for (const [name, value] of Object.entries(reply.getHeaders())) {
        if (value !== undefined) reply.raw.setHeader(name, value as string);
      }
      reply.hijack();
      reply.raw.on('close', () => {
        void transport.close();
        void server.close();
      });
      try {
        await server.connect(transport);
        await transport.handleRequest(request.raw, reply.raw, request.body);
      } catch (err) {
        request.log.error({ err }, 'MCP request failed');
        if (!reply.raw.headersSent) {
          reply.raw.writeHead(500, { 'content-type': 'application/json' });
          reply.raw.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32603, message: 'Internal error' }, id: null }));
        } else {
          reply.raw.end();
        }
      }
    });
  });
}
