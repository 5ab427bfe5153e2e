import type { FastifyRequest } from 'fastify';
import { CallToolRequestSchema, InitializeRequestSchema, JSONRPCMessageSchema, ListToolsRequestSchema, SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';
import type { ToolEntry } from './tools.ts';

/**
 * The common request on /mcp — one `tools/call` of a known tool, as a plain JSON-RPC object —
 * answered without the SDK's per-request McpServer, transport and web Request/Response, which
 * cost more CPU than the read itself. Only requests the SDK would accept unchanged qualify
 * (the same Accept, Content-Type, protocol-version and message-shape rules); anything else
 * (batches, initialize, tools/list, unknown tools, extra fields) goes through the SDK, so
 * behaviour is the SDK's either way. The answer is the SDK's JSON response, byte for byte in
 * key order: `{"result":…,"jsonrpc":"2.0","id":…}` or `{"jsonrpc":"2.0","id":…,"error":…}`.
 */
export interface FastCall {
  id: string | number;
  entry: ToolEntry;
  arguments: unknown;
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const onlyKeys = (value: Record<string, unknown>, allowed: Set<string>) => Object.keys(value).every((k) => allowed.has(k));

const MESSAGE_KEYS = new Set(['jsonrpc', 'id', 'method', 'params']);
const PARAM_KEYS = new Set(['name', 'arguments']);

/** The transport's own header rules (Accept lists both types; JSON body; a known protocol version). */
function headersAsSdkWants(headers: FastifyRequest['headers']): boolean {
  const accept = headers.accept;
  if (typeof accept !== 'string' || !accept.includes('application/json') || !accept.includes('text/event-stream')) return false;
  const type = headers['content-type']?.split(';')[0].trim().toLowerCase();
  if (type !== 'application/json') return false;
  const version = headers['mcp-protocol-version'];
  return version === undefined || (typeof version === 'string' && SUPPORTED_PROTOCOL_VERSIONS.includes(version));
}

/** The call this request is, when it may take the fast path; undefined sends it to the SDK. */
export function fastCall(request: FastifyRequest, tools: Map<string, ToolEntry>): FastCall | undefined {
  const body = request.body;
  if (!isPlainObject(body) || !onlyKeys(body, MESSAGE_KEYS)) return undefined;
  if (body.jsonrpc !== '2.0' || body.method !== 'tools/call') return undefined;
  const id = body.id;
  if (!(typeof id === 'string' || (typeof id === 'number' && Number.isInteger(id)))) return undefined;
  const params = body.params;
  if (!isPlainObject(params) || !onlyKeys(params, PARAM_KEYS) || typeof params.name !== 'string') return undefined;
  if (params.arguments !== undefined && !isPlainObject(params.arguments)) return undefined;
  const entry = tools.get(params.name);
  if (!entry || !headersAsSdkWants(request.headers)) return undefined;
  return { id, entry, arguments: params.arguments };
}

/** A successful read: the serialized record is spliced in as structuredContent, not parsed again. */
export const okResponse = (id: FastCall['id'], text: string): string =>
  `{"result":{"content":[{"type":"text","text":${JSON.stringify(text)}}],"structuredContent":${text}},"jsonrpc":"2.0","id":${JSON.stringify(id)}}`;

/** A tool error result (isError), in the SDK's key order. */
export const toolErrorResponse = (id: FastCall['id'], text: string): string =>
  JSON.stringify({ result: { content: [{ type: 'text', text }], isError: true }, jsonrpc: '2.0', id });

/** A JSON-RPC error, as the SDK's protocol layer writes one. */
export const rpcErrorResponse = (id: FastCall['id'] | null, error: { code: number; message: string; data?: unknown }): string =>
  JSON.stringify({ jsonrpc: '2.0', id, error: { code: error.code, message: error.message, ...(error.data !== undefined && { data: error.data }) } });

/** Requests whose params the SDK checks with a schema, answering -32603 and the validator's whole report. */
const PARAMS_SCHEMAS: Record<string, { safeParse(v: unknown): { success: boolean; error?: { issues: { path: PropertyKey[]; message: string }[] } } }> = {
  initialize: InitializeRequestSchema,
  'tools/list': ListToolsRequestSchema,
  'tools/call': CallToolRequestSchema,
};

const idOf = (message: unknown): string | number | null => {
  const id = isPlainObject(message) ? message.id : undefined;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
};

/**
 * Where JSON-RPC 2.0 (section 5.1, 6) asks for another answer than the SDK gives, the answer
 * it asks for: JSON that parsed but is not a JSON-RPC message, or an empty batch, is -32600
 * Invalid Request (the SDK says -32700, a parse error); the params of initialize, tools/list
 * or tools/call that do not fit their schema are -32602 naming the first problem (the SDK says
 * -32603 with the validator's report). Undefined leaves the request to the SDK (an empty or
 * unparsable body stays its -32700; header problems its 406 and 415).
 */
export function protocolRefusal(request: FastifyRequest): { status: number; body: string } | undefined {
  const body = request.body;
  if (body === undefined || !headersAsSdkWants(request.headers)) return undefined;
  const refuse = (status: number, id: FastCall['id'] | null, code: number, message: string) => ({ status, body: rpcErrorResponse(id, { code, message }) });
  if (Array.isArray(body) && body.length === 0) return refuse(400, null, -32600, 'Invalid Request: an empty batch');
  for (const message of Array.isArray(body) ? body : [body]) {
    if (!JSONRPCMessageSchema.safeParse(message).success) return refuse(400, idOf(message), -32600, 'Invalid Request: not a JSON-RPC 2.0 message');
  }
  if (Array.isArray(body) || !isPlainObject(body) || body.id === undefined) return undefined;
  const checked = PARAMS_SCHEMAS[String(body.method)]?.safeParse(body);
  if (!checked || checked.success) return undefined;
  const issue = checked.error!.issues[0];
  return refuse(200, idOf(body), -32602, `Invalid params: ${issue.path.map(String).join('.') || 'params'}: ${issue.message}`);
}
