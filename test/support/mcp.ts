import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import type { JsonSchemaType, jsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/types.js';
import { compileOnce } from '../../core/validation.ts';

/**
 * The SDK's own Ajv validator, with each schema compiled once per test process (the kernel's
 * compileOnce): a client compiles every tool's output schema on tools/list, and the suite
 * connects many clients to servers with the same tools. The SDK still checks every result.
 */
const ajv = new AjvJsonSchemaValidator();
const validator: jsonSchemaValidator = { getValidator: compileOnce((schema) => ajv.getValidator(schema as JsonSchemaType)) as jsonSchemaValidator['getValidator'] };

/**
 * An MCP SDK client connected to `${baseUrl}/mcp` over Streamable HTTP. The key travels in
 * `X-API-KEY` on every request (`requestInit.headers`); `headers` replaces that, e.g. to send
 * `Authorization: Bearer ...` or nothing at all. Closed through `t.teardown` when given.
 */
export async function connectMcp(
  baseUrl: string,
  opts: { key?: string; headers?: Record<string, string>; teardown?: (fn: () => unknown) => void } = {},
): Promise<Client> {
  const headers = opts.headers ?? (opts.key ? { 'X-API-KEY': opts.key } : {});
  const client = new Client({ name: 'labdata-test', version: '0.0.0' }, { jsonSchemaValidator: validator });
  const transport = new StreamableHTTPClientTransport(new URL(baseUrl + '/mcp'), { requestInit: { headers } });
  await client.connect(transport);
  opts.teardown?.(() => client.close());
  return client;
}

/** tools/call with the result typed as a tool result (the SDK's union also allows a legacy shape). */
export async function callTool(client: Client, name: string, args: Record<string, unknown> = {}): Promise<CallToolResult> {
  return (await client.callTool({ name, arguments: args })) as CallToolResult;
}

/** The text of a result's first text block. */
export function resultText(result: CallToolResult): string {
  const block = result.content.find((c) => c.type === 'text');
  return block && block.type === 'text' ? block.text : '';
}

/** The assertions this helper uses, as tap's `t` offers them. */
interface Assert {
  equal: (...args: any[]) => unknown;
  same: (...args: any[]) => unknown;
  notOk: (...args: any[]) => unknown;
}

/**
 * Calls a tool and the equivalent REST GET as the same user and asserts the tool's
 * structuredContent and text are exactly the REST body (spec: "The result mirrors the JSON of
 * the equivalent REST GET"). `restPath` is under /api/v1 and carries the same page/size.
 */
export async function expectToolMatchesRest(
  t: Assert,
  server: { get(path: string, opts: { key: string }): Promise<{ status: number; text: string; body: unknown }> },
  client: Client,
  key: string,
  tool: string,
  args: Record<string, unknown>,
  restPath: string,
): Promise<void> {
  const rest = await server.get('/api/v1' + restPath, { key });
  t.equal(rest.status, 200, `GET ${restPath}`);
  const result = await callTool(client, tool, args);
  t.notOk(result.isError, `${tool} ${JSON.stringify(args)} succeeds: ${result.isError ? resultText(result) : ''}`);
  t.same(result.structuredContent, rest.body, `${tool} ${JSON.stringify(args)} equals GET ${restPath}`);
  t.equal(resultText(result), rest.text, `${tool}: text content is the REST body`);
}
