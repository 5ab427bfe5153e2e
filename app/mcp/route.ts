import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import os from 'node:os';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Config } from '../../core/config.ts';
import { HttpError, ValidationError } from '../../core/errors.ts';
import { UnparsableBody } from '../http/json-body.ts';
import type { Orm } from '../../core/db/orm.ts';
import { databaseFailure, OUTAGE_RETRY_AFTER, type DatabaseFailure } from '../http/database-failure.ts';
import type { KernelServices } from '../../core/kernel/services.ts';
import { executeRead, operationContext } from '../http/operations.ts';
import type { ReadReplicas } from '../db/replicas.ts';
import type { Actor } from '../../core/auth/api-keys.ts';
import type { ToolEntry } from './tools.ts';
import { redactUrl } from '../http/redact.ts';
import { clientHungUp, routeNotFound } from '../http/envelope.ts';
import { fastCall, okResponse, protocolRefusal, rpcErrorResponse, toolErrorResponse, type FastCall } from './fast-call.ts';

const errorResult = (text: string): CallToolResult => ({ isError: true, content: [{ type: 'text', text }] });

/** How a tool call ended, for its log line: `ok`, a client mistake (`invalid_arguments`, `not_found`, ...), or `error`. */
type Outcome = 'ok' | 'invalid_arguments' | 'not_found' | 'forbidden' | 'client_error' | 'error';

/** What a tool answered: the record's JSON text, or an error text for the agent (isError). */
type ToolAnswer = { text: string; isError: boolean };

async function callTool(
  entry: ToolEntry,
  args: unknown,
  actor: Actor,
  orm: Orm,
  services: KernelServices,
  log: FastifyRequest['log'],
  replicas: ReadReplicas | undefined,
): Promise<{ answer: ToolAnswer; outcome: Outcome }> {
  const failed = (text: string, outcome: Outcome) => ({ answer: { text, isError: true }, outcome });
  const checked = entry.validate(args ?? {});
  if (!checked.valid) return failed(`Invalid arguments for ${entry.tool.name}: ${checked.errorMessage}`, 'invalid_arguments');
  try {
    const read = () => executeRead(entry.read, operationContext(actor, orm, services, log), entry.input(checked.data));
    const result = await (replicas ? replicas.read(actor.keyId, read) : read());
    return { answer: { text: entry.serialize(result), isError: false }, outcome: 'ok' };
  } catch (err) {
    // Client errors are normal tool results the agent can act on: not found (including "not
    // viewable" and other organizations), forbidden, invalid input with its field messages.
    if (err instanceof ValidationError && err.errors.length > 0) {
      return failed(`${err.message}: ${err.errors.map((e) => `${e.field}: ${e.message}`).join('; ')}`, 'invalid_arguments');
    }
    if (err instanceof HttpError && err.statusCode < 500) {
      return failed(err.message, err.statusCode === 404 ? 'not_found' : err.statusCode === 403 ? 'forbidden' : 'client_error');
    }
    const failure = databaseFailure(err);
    if (failure?.status === 503) {
      // Not the tool's answer but the service's state: a JSON-RPC error the client may retry.
      log.warn({ err, tool: entry.tool.name }, 'tool call failed: database unavailable');
      throw unavailable(failure);
    }
    if (failure) return failed(failure.message, 'client_error');
    // Anything else may carry SQL or internals: log it, tell the agent only that it failed.
    log.error({ err, tool: entry.tool.name }, 'tool call failed');
    return failed('Internal error while running the tool', 'error');
  }
}

/** The SDK's CallToolResult for an answer (structuredContent equals the REST body). */
const toolResult = ({ text, isError }: ToolAnswer): CallToolResult =>
  isError ? errorResult(text) : { content: [{ type: 'text', text }], structuredContent: JSON.parse(text) };

/** JSON-RPC server error for "try again later" (the range -32000 to -32099 is the server's own). */
const UNAVAILABLE_CODE = -32001;

function unavailable(failure: DatabaseFailure) {
  const data = { retryAfter: failure.retryAfter ?? OUTAGE_RETRY_AFTER };
  return Object.assign(new Error(`Service unavailable: ${failure.message}`), { code: UNAVAILABLE_CODE, data });
}

/** One line per tool call, like a request's: tool, user, organization, key id, duration, outcome. */
function logToolCall(log: FastifyRequest['log'], actor: Actor, tool: string, started: number, outcome: Outcome | 'unknown_tool') {
  const durationMs = Math.round((performance.now() - started) * 1000) / 1000;
  // The key id is already bound to the request's logger (app/http/auth.ts).
  log.info({ tool, userId: actor.userId, organizationId: actor.organizationId, organizationUserId: actor.organizationUserId, durationMs, outcome }, 'tool call');
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
 * The host names /mcp answers to: localhost names, this machine's name, the bound host (unless
 * a wildcard), the host of LABDATA_PUBLIC_URL (the address clients use, e.g. behind a proxy)
 * and LABDATA_MCP_ALLOWED_HOSTS. None of these is a name an attacker's page can rebind.
 */
export function mcpAllowedHosts(config: Config): string[] {
  const names = ['localhost', 'localhost.localdomain', 'ip6-localhost', os.hostname()];
  if (!['0.0.0.0', '::', ''].includes(config.host)) names.push(config.host);
  if (config.publicUrl) names.push(config.publicUrl);
  names.push(...config.mcpAllowedHosts);
  return [...new Set(names.map((h) => hostName(h) ?? h.toLowerCase()).filter(Boolean))];
}

/**
 * DNS rebinding makes a browser send a foreign *name* (the attacker's domain, now resolving to
 * us) as Host and Origin. So Host must be a known name (mcpAllowedHosts) or an IP literal, which
 * rebinding cannot produce; Origin, when present, must be a known name or the request's own
 * host. Returns why a request is refused, or undefined when it may go on.
 */
function rebindingRefusal(headers: FastifyRequest['headers'], allowed: Set<string>): string | undefined {
  const host = hostName(headers.host);
  if (!host) return 'Forbidden: the request has no usable Host header';
  const fix = 'add it to LABDATA_MCP_ALLOWED_HOSTS (comma-separated host names) or set LABDATA_PUBLIC_URL to the address clients use';
  if (!(allowed.has(host) || isIP(host) !== 0)) {
    return `Forbidden: host "${printable(host)}" is not allowed for /mcp (DNS-rebinding protection); if it is this server's name, ${fix}`;
  }
  if (headers.origin === undefined) return undefined;
  const origin = hostName(headers.origin);
  if (origin !== undefined && (allowed.has(origin) || origin === host)) return undefined;
  return `Forbidden: origin "${printable(headers.origin)}" is not allowed for /mcp (DNS-rebinding protection); if it is a page of this deployment, ${fix}`;
}

/** A header value as it may be quoted back: short, printable ASCII only. */
const printable = (value: string) => value.replace(/[^\x20-\x7e]|"/g, '?').slice(0, 100);

/** The JSON-RPC error for a request Fastify refused before the MCP transport saw it. */
function jsonRpcError(status: number, error: { code?: string }): { code: number; message: string } {
  if (status === 400 && error.code?.startsWith('FST_ERR_CTP_')) return { code: -32700, message: 'Parse error: the body is not valid JSON' };
  // The kernel's JSON parser (app/http/json-body.ts): not UTF-8, or nested too deep.
  if (error instanceof UnparsableBody) return { code: -32700, message: `Parse error: ${error.message}` };
  if (status === 413) return { code: -32600, message: 'Invalid Request: the body is too large' };
  if (status === 429) return { code: -32000, message: 'Too Many Requests: the rate limit of this API key is exhausted; see Retry-After' };
  // The kernel's parser names a refused charset; Fastify's own 415 is a media type other than JSON.
  if (status === 415) return { code: -32000, message: error instanceof HttpError ? error.message : 'Unsupported Media Type: Content-Type must be application/json' };
  if (status < 500) return { code: -32600, message: 'Invalid Request' };
  return { code: -32603, message: 'Internal error' };
}

/** JSON-RPC -32602 with the message as is (McpError would prefix "MCP error -32602: " to it). */
const invalidParams = (message: string) => Object.assign(new Error(message), { code: ErrorCode.InvalidParams });

const SERVER_INFO = { name: 'labdata', title: 'Lab Data Service', version: packageVersion() };

/** Sent in the initialize result: what an agent needs before its first call. */
const INSTRUCTIONS = [
  'Lab Data Service: read-only access to the laboratory records of one organization, the one of the API key, as the key\'s user sees them (records the user may not view are reported as not found).',
  'Records nest: a project contains studies, a study contains assays, and each assay has one assay type. Notes attach to the organization, a project, a study or an assay; tasks, external links and storage folders to a project, study or assay. Activity records the changes.',
  'Start with list_projects, then list_studies_by_project and list_assays_by_study; get_* tools fetch one record by its id (a UUID).',
  'Listing tools page: pass page (from 0) and size (default 20, at most 100); the result carries content, totalElements, totalPages, number and size. Ask for the next page while number + 1 < totalPages.',
  'Results are the same JSON as the REST API (GET /api/v1/...). Nothing here creates, changes or deletes anything.',
].join('\n\n');

function packageVersion(): string {
  try {
    return JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version;
  } catch {
    return '0.0.0';
  }
}

const notAllowed = { jsonrpc: '2.0', error: { code: -32000, message: 'Method not allowed: this endpoint is stateless; POST JSON-RPC requests' }, id: null };

/**
 * POST /mcp: Streamable HTTP in stateless mode (a fresh server and transport per request), so
 * any instance can answer any request. Auth runs in the caller-supplied onRequest hook.
 */
export function registerMcp(
  app: FastifyInstance,
  opts: { tools: Map<string, ToolEntry>; orm: Orm; services: KernelServices; allowedHosts: string[]; auth: (req: FastifyRequest, reply: FastifyReply) => Promise<unknown>; replicas?: ReadReplicas },
) {
  const allowed = new Set(['localhost', ...opts.allowedHosts.map((h) => hostName(h) ?? h.toLowerCase())]);
  const toolList = [...opts.tools.values()].map((e) => e.tool);

  /** A single tools/call of a known tool (app/mcp/fast-call.ts): same answer, no SDK server per request. */
  async function answerFast(call: FastCall, request: FastifyRequest, reply: FastifyReply) {
    const started = performance.now();
    let body: string;
    try {
      const { answer, outcome } = await callTool(call.entry, call.arguments, request.actor!, opts.orm, opts.services, request.log, opts.replicas);
      logToolCall(request.log, request.actor!, call.entry.tool.name, started, outcome);
      body = answer.isError ? toolErrorResponse(call.id, answer.text) : okResponse(call.id, answer.text);
    } catch (err) {
      const error = err as { code?: unknown; message?: string; data?: unknown };
      body = rpcErrorResponse(call.id, { code: Number.isSafeInteger(error.code) ? (error.code as number) : ErrorCode.InternalError, message: error.message ?? 'Internal error', data: error.data });
    }
    // A Buffer keeps the SDK's exact header (Fastify appends a charset to string payloads).
    return reply.code(200).header('content-type', 'application/json').send(Buffer.from(body));
  }

  app.register(async (mcp) => {
    // DNS-rebinding protection: a browser tricked into calling us carries a foreign Host/Origin.
    mcp.addHook('onRequest', async (request, reply) => {
      const refusal = rebindingRefusal(request.headers, allowed);
      if (refusal) return reply.code(403).send({ jsonrpc: '2.0', error: { code: -32000, message: refusal }, id: null });
    });
    mcp.addHook('onRequest', opts.auth);
    // Body parse errors are JSON-RPC errors on this endpoint, not the REST envelope.
    mcp.setErrorHandler(async (error: { statusCode?: number; code?: string }, request, reply) => {
      // The database lost while authenticating: 503 and `Retry-After`, still a JSON-RPC error
      // (not a client that hung up mid-body: its "aborted" has a socket code too).
      const failure = clientHungUp(error, request) ? undefined : databaseFailure(error);
      if (failure?.status === 503) {
        request.log.warn({ err: error }, 'MCP request failed: database unavailable');
        const { code, message, data } = unavailable(failure);
        reply.header('retry-after', String(data.retryAfter));
        return reply.code(503).send({ jsonrpc: '2.0', error: { code, message, data }, id: null });
      }
      const status = error.statusCode && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 500;
      if (status === 500) request.log.error({ err: error }, 'MCP request failed');
      return reply.code(status).send({ jsonrpc: '2.0', error: jsonRpcError(status, error), id: null });
    });
    // No SSE stream and no session: a GET handed to the transport would stay open forever.
    mcp.route({
      method: ['GET', 'DELETE', 'PUT', 'PATCH', 'OPTIONS'],
      url: '/mcp',
      schema: { hide: true },
      handler: async (_req, reply) => reply.code(405).header('allow', 'POST').send(notAllowed),
    });
    // Below /mcp nothing exists; as under /api/v1, only a caller with a key learns so (auth runs first).
    mcp.all('/mcp/*', { schema: { hide: true } }, routeNotFound);
    mcp.post('/mcp', { schema: { hide: true } }, async (request, reply) => {
      const actor = request.actor!;
      const call = fastCall(request, opts.tools);
      if (call) return answerFast(call, request, reply);
      const refused = protocolRefusal(request);
      if (refused) return reply.code(refused.status).header('content-type', 'application/json').send(Buffer.from(refused.body));
      const server = new McpServer(SERVER_INFO, { instructions: INSTRUCTIONS });
      server.server.registerCapabilities({ tools: { listChanged: false } });
      server.server.setRequestHandler(ListToolsRequestSchema, async (req) => {
        // The list is never paged, so no cursor was ever issued: any cursor is invalid (MCP spec).
        if (req.params?.cursor !== undefined) throw invalidParams('Invalid cursor: this server issues no cursors; call tools/list without one');
        return { tools: toolList };
      });
      server.server.setRequestHandler(CallToolRequestSchema, async (req) => {
        const started = performance.now();
        const entry = opts.tools.get(req.params.name);
        if (!entry) {
          // The name is the client's text: a key pasted into it must not reach the log.
          logToolCall(request.log, actor, redactUrl(req.params.name.slice(0, 128)), started, 'unknown_tool');
          throw invalidParams(`Unknown tool: ${req.params.name}`);
        }
        const { answer, outcome } = await callTool(entry, req.params.arguments, actor, opts.orm, opts.services, request.log, opts.replicas);
        logToolCall(request.log, actor, entry.tool.name, started, outcome);
        return toolResult(answer);
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
