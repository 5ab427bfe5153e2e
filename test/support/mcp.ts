import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

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
  const client = new Client({ name: 'labdata-test', version: '0.0.0' });
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
