import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { HttpError } from '../errors.ts';
import type { Orm } from '../db/orm.ts';
import type { KernelServices } from '../kernel/services.ts';
import { executeRead, operationContext } from '../http/operations.ts';
import type { Actor } from '../auth/api-keys.ts';
import type { ToolEntry } from './tools.ts';

const errorResult = (text: string): CallToolResult => ({ isError: true, content: [{ type: 'text', text }] });

async function callTool(entry: ToolEntry, args: unknown, actor: Actor, orm: Orm, services: KernelServices, log: FastifyRequest['log']): Promise<CallToolResult> {
  const checked = entry.validate(args ?? {});
  if (!checked.valid) return errorResult(`Invalid arguments for ${entry.tool.name}: ${checked.errorMessage}`);
  try {
    const result = await executeRead(entry.read, operationContext(actor, orm, services, log), { ...checked.data });
    const text = entry.serialize(result);
    return { content: [{ type: 'text', text }], structuredContent: JSON.parse(text) };
  } catch (err) {
    // Not found (including "not viewable" and other organizations) is a normal tool result.
    if (err instanceof HttpError && err.statusCode < 500) return errorResult(err.message);
    log.error({ err, tool: entry.tool.name }, 'tool call failed');
    return errorResult('Internal error while running the tool');
  }
}

function allowedHost(value: string | undefined, allowed: Set<string>): boolean {
  if (!value) return false;
  let host: string;
  try {
    host = new URL(value.includes('://') ? value : `http://${value}`).hostname;
  } catch {
    return false;
  }
  return allowed.has(host.replace(/^\[|\]$/g, '').toLowerCase());
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
  const allowed = new Set(['localhost', '127.0.0.1', '::1', ...opts.allowedHosts.map((h) => h.toLowerCase())]);
  const toolList = [...opts.tools.values()].map((e) => e.tool);

  app.register(async (mcp) => {
    // DNS-rebinding protection: a browser tricked into calling us carries a foreign Host/Origin.
    mcp.addHook('onRequest', async (request, reply) => {
      const origin = request.headers.origin;
      if (!allowedHost(request.headers.host, allowed) || (origin !== undefined && !allowedHost(origin, allowed))) {
        return reply.code(403).send();
      }
    });
    mcp.addHook('onRequest', opts.auth);
    // Body parse errors are JSON-RPC errors on this endpoint, not the REST envelope.
    mcp.setErrorHandler(async (error: { statusCode?: number }, _request, reply) => {
      const status = error.statusCode && error.statusCode < 500 ? error.statusCode : 500;
      const code = status === 400 ? -32700 : -32603;
      return reply.code(status).send({ jsonrpc: '2.0', error: { code, message: status === 400 ? 'Parse error' : 'Internal error' }, id: null });
    });
    mcp.get('/mcp', { schema: { hide: true } }, async (_req, reply) => reply.code(405).header('allow', 'POST').send(notAllowed));
    mcp.delete('/mcp', { schema: { hide: true } }, async (_req, reply) => reply.code(405).header('allow', 'POST').send(notAllowed));
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
