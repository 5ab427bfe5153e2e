// /mcp for operators and integrators (issue 12, points 8 and 9): allowed hosts derived from the
// public address, a 403 that names the setting, a log line per tool call, titles, instructions,
// and the MCP rule for a cursor the server never issued.
import https from 'node:https';
import os from 'node:os';
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { captureLogs } from '../support/logs.ts';
import { startTestServer } from '../support/server.ts';
import { callTool, connectMcp } from '../support/mcp.ts';
import { loadConfig } from '../../app/config.ts';
import { mcpAllowedHosts } from '../../app/mcp/route.ts';

// The app's JSON log lines, parsed.
const { logger, lines } = captureLogs();

const server = await startTestServer(t, {
  logger,
  plugins: ['users', 'projects', 'studies', 'assay-types', 'assays', 'tasks', 'notes', 'external-links'],
  env: { LABDATA_PUBLIC_URL: 'https://Lab.Example.org:8443/', LABDATA_MCP_ALLOWED_HOSTS: 'mcp.internal' },
});
const org = await server.organization('Acme');
const admin = await server.admin(org);
const project = (await server.post('/api/v1/projects', { code: 'P', name: 'P', description: 'd', visibility: 'PUBLIC' }, { key: admin.key })).body;
const client = await connectMcp(server.url, { key: admin.key, teardown: (fn) => t.teardown(fn) });

const toolsList = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });

/** POST /mcp with any Host (node:https, since fetch does not let Host be set). */
function post(headers: Record<string, string>): Promise<{ status: number; text: string }> {
  const url = new URL(server.url + '/mcp');
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        hostname: url.hostname,
        port: url.port,
        path: '/mcp',
        method: 'POST',
        servername: url.hostname,
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode!, text }));
      },
    );
    req.on('error', reject);
    req.end(toolsList);
  });
}

t.test('allowed hosts: derived from LABDATA_PUBLIC_URL and the machine, plus LABDATA_MCP_ALLOWED_HOSTS', async (t) => {
  const key = { 'x-api-key': admin.key };
  t.equal((await post({ ...key, host: 'lab.example.org' })).status, 200, 'the public address, no setting needed');
  t.equal((await post({ ...key, host: 'LAB.example.org:8443' })).status, 200, 'with its port, any case');
  t.equal((await post({ ...key, host: '127.0.0.1', origin: 'https://lab.example.org' })).status, 200, 'an Origin of the public address');
  t.equal((await post({ ...key, host: 'mcp.internal' })).status, 200, 'a name from LABDATA_MCP_ALLOWED_HOSTS');
  t.equal((await post({ ...key, host: os.hostname() })).status, 200, "this machine's name");
  t.same(mcpAllowedHosts(loadConfig({ LABDATA_HOST: '0.0.0.0' })).filter((h) => h !== os.hostname().toLowerCase()), ['localhost', 'localhost.localdomain', 'ip6-localhost'], 'defaults: localhost names');
  t.ok(mcpAllowedHosts(loadConfig({ LABDATA_HOST: 'lab-1.local', LABDATA_PUBLIC_URL: 'https://data.acme.test' })).includes('data.acme.test'));
  t.ok(mcpAllowedHosts(loadConfig({ LABDATA_HOST: 'lab-1.local' })).includes('lab-1.local'), 'the bound host name');
  t.throws(() => loadConfig({ LABDATA_PUBLIC_URL: 'lab.example.org' }), { message: /LABDATA_PUBLIC_URL must be an absolute URL/ }, 'a public URL must be absolute');
});

t.test('a refused host gets 403 before authentication, with a message naming the setting', async (t) => {
  for (const headers of [{ host: 'evil.example.com' }, { host: 'evil.example.com', 'x-api-key': admin.key }] as Record<string, string>[]) {
    const res = await post(headers);
    t.equal(res.status, 403);
    const body = JSON.parse(res.text);
    t.match(body, { jsonrpc: '2.0', id: null, error: { code: -32000 } });
    t.match(body.error.message, /host "evil\.example\.com" is not allowed/);
    t.match(body.error.message, /LABDATA_MCP_ALLOWED_HOSTS/);
    t.match(body.error.message, /LABDATA_PUBLIC_URL/);
  }
  const origin = JSON.parse((await post({ host: 'lab.example.org', origin: 'https://evil.example.com' })).text);
  t.match(origin.error.message, /origin "https:\/\/evil\.example\.com" is not allowed.*LABDATA_MCP_ALLOWED_HOSTS/);
});

t.test('every tool call is logged: tool, user, duration, outcome', async (t) => {
  lines.length = 0;
  await callTool(client, 'get_project', { id: project.id });
  await callTool(client, 'get_project', { id: randomUUID() });
  await callTool(client, 'get_project', { id: 'not-a-uuid' });
  await client.callTool({ name: 'drop_everything', arguments: {} }).catch(() => undefined);
  const calls = lines.filter((l) => l.msg === 'tool call');
  t.same(
    calls.map((l) => [l.tool, l.outcome]),
    [['get_project', 'ok'], ['get_project', 'not_found'], ['get_project', 'invalid_arguments'], ['drop_everything', 'unknown_tool']],
  );
  for (const line of calls) {
    t.match(line, { userId: admin.userId, organizationId: org, keyId: admin.keyId, reqId: String });
    t.type(line.durationMs, 'number');
  }
  t.notMatch(JSON.stringify(lines), admin.key.split('.')[1], 'never the key');
});

t.test('tools carry titles; initialize carries instructions; descriptions read right', async (t) => {
  const { tools } = await client.listTools();
  for (const tool of tools) {
    t.ok(tool.title && tool.title.length > 0, `${tool.name} has a title`);
    t.notMatch(tool.description, /\ba [aeio]/i, `${tool.name}: no "a assay"`);
    t.notMatch(tool.description, /\ban [bcdfgjklmnpqrstvwxyz]/i, `${tool.name}: no "an study"`);
  }
  t.equal(tools.find((x) => x.name === 'list_assays_by_study')?.title, 'List assays by study');
  t.match(tools.find((x) => x.name === 'get_assay')?.description, 'assay');
  const instructions = client.getInstructions() ?? '';
  t.match(instructions, /read-only/i, 'what the server is');
  t.match(instructions, /project contains studies, a study contains assays/, 'how records nest');
  t.match(instructions, /page \(from 0\) and size/, 'how paging works');
  t.notMatch(instructions, /\bsearch\b/, 'no search tool here (plugins/search is not enabled): no word of it');
  t.match(client.getServerVersion(), { name: 'labdata', title: 'Lab Data Service' });
});

t.test('tools/list with a cursor the server never issued is -32602', async (t) => {
  const err = await client.listTools({ cursor: 'bogus' }).then(() => undefined, (e: unknown) => e);
  t.type(err, McpError);
  t.equal((err as McpError).code, -32602);
  t.ok((await client.listTools()).tools.length > 0, 'without a cursor: the list');
});
