import https from 'node:https';
import { randomUUID } from 'node:crypto';
import t from 'tap';
import { Type } from '@sinclair/typebox';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { startTestServer, testCast, type Member } from '../support/server.ts';
import { callTool, connectMcp, resultText } from '../support/mcp.ts';
import { definePlugin, defineRead } from '../../core/public.ts';
import type { ReadDefinition } from '../../core/kernel/operations.ts';
import { NoteService } from '../../plugins/notes/service.ts';
import { applyBootstrap } from '../../app/cli/bootstrap.ts';

const server = await startTestServer(t);
const { org, other: otherOrg, admin, alice, bob, outsider } = await testCast(server, ['Acme', 'Other']);
// Five members in all, so that user listings have two full pages of two.
await server.member(org, { status: 'INACTIVE' });
await server.member(org);

async function createProject(owner: Member, code: string, visibility: string) {
  const res = await server.post('/api/v1/projects', { code, name: `Project ${code}`, description: 'Seeded', visibility }, { key: owner.key });
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.text}`);
  return res.body as { id: string };
}

// Several projects of every visibility, so that paging and visibility both matter.
const seeded: { id: string }[] = [];
for (const [i, visibility] of ['PUBLIC', 'PROTECTED', 'PRIVATE', 'PUBLIC', 'PRIVATE', 'PROTECTED'].entries()) {
  seeded.push(await createProject(i % 2 ? admin : alice, `P-${i}`, visibility));
}
const alicePrivate = seeded[2];
const otherOrgProject = await createProject(outsider, 'X-1', 'PUBLIC');
// Studies in the newest project (the first one a default-ordered list shows), two full pages.
for (const i of [1, 2, 3, 4]) {
  const res = await server.post('/api/v1/studies', { projectId: seeded[5].id, name: `Study ${i}` }, { key: admin.key });
  if (res.status !== 201) throw new Error(`study create failed: ${res.status} ${res.text}`);
}

// One or more records of every other resource, so every look-up tool has an id to fetch.
async function seed(path: string, bodies: Record<string, unknown>[], key = admin.key) {
  for (const body of bodies) {
    const res = await server.post(path, body, { key });
    if (res.status !== 201) throw new Error(`seeding ${path} failed: ${res.status} ${res.text}`);
  }
}
await seed('/api/v1/teams', [{ name: 'Biology', userIds: [alice.userId] }, { name: 'Chemistry' }, { name: 'Physics' }]);
await seed('/api/v1/study-collections', [{ name: 'C1', visibility: 'PUBLIC' }, { name: 'C2', visibility: 'PROTECTED' }, { name: 'C3', visibility: 'PRIVATE' }]);
await seed('/api/v1/keywords', [{ value: 'pH' }, { value: 'Temperature' }, { value: 'Yield' }]);
await seed('/api/v1/collaborators', [{ label: 'Lab A' }, { label: 'Lab B' }, { label: 'Lab C' }]);
const seededType = await server.post('/api/v1/assay-types', { name: 'Seeded', status: 'ACTIVE', fields: [{ name: 'x', displayName: 'X', type: 'TEXT' }], tasks: [{ label: 'T' }] }, { key: admin.key });
await seed('/api/v1/assay-types', [{ name: 'B' }, { name: 'C' }]);
const newestStudy = (await server.get('/api/v1/studies?size=1', { key: admin.key })).body.content[0].id;
await seed('/api/v1/assays', [1, 2, 3, 4].map((i) => ({ studyId: newestStudy, assayTypeId: seededType.body.id, name: `Assay ${i}`, values: { x: 'v' } })));
// Notes cannot be written through the API: provision them through the note service.
const noteService = new NoteService(server.kernel.services);
const first = async (path: string) => (await server.get(`/api/v1${path}?size=1`, { key: admin.key })).body.content[0].id as string;
for (const [kind, id] of [['organization', org], ['project', await first('/projects')], ['study', await first('/studies')], ['assay', await first('/assays')]]) {
  for (const i of [1, 2, 3]) await noteService.create(server.orm.em.fork(), { organizationId: org, parent: { kind, id }, type: 'NOTE', format: 'TEXT', content: `Note ${i}` });
}
await seed(`/api/v1/projects/${await first('/projects')}/external-links`, [{ label: 'L', url: 'https://example.org' }]);
// Integrations are made by the bootstrap file only.
await applyBootstrap(server.orm.em.fork(), {
  integrations: ['A', 'B', 'C'].map((n) => ({ ref: n, organization: org, type: 'GIT', name: `Git ${n}`, settings: { provider: 'LOCAL', rootPath: '/tmp' } })),
  // Storage drives and shared folders too (the drive is never contacted by these reads).
  storageDrives: [{ ref: 'nas', organization: org, name: 'NAS', kind: 'LOCAL', rootPath: '/tmp', sharedFolders: ['a', 'b', 'c'].map((path) => ({ path })) }],
}, server.kernel);

/** The spec's 52 tool names ("Agent tool endpoint"); with the search plugin, `search` makes 53 (issue 30). */
const SPEC_TOOLS = new Set(`list_projects get_project list_studies get_study list_studies_by_project list_assays get_assay
  list_assays_by_study list_assay_types get_assay_type list_organization_notes list_project_notes list_study_notes
  list_assay_notes get_organization_note get_project_note get_study_note get_assay_note list_study_tasks list_assay_tasks
  get_task list_project_external_links list_study_external_links list_assay_external_links list_collaborators
  get_collaborator list_teams get_team list_keywords get_keyword list_study_collections get_study_collection
  list_study_relationships list_integrations get_integration list_storage_drives get_storage_drive
  list_project_storage_folders list_study_storage_folders list_assay_storage_folders list_shared_storage_folders
  get_shared_storage_folder list_organization_users get_organization_user list_users get_user list_activities
  get_activity list_activities_by_project list_activities_by_study list_activities_by_assay list_activities_by_user`.split(/\s+/));

const TOOLS = new Set([...SPEC_TOOLS, 'search']);
const tools = server.kernel.reads.filter((read) => read.tool !== false);
const client = async (m: Member) => connectMcp(server.url, { key: m.key, teardown: (fn) => t.teardown(fn) });
const adminClient = await client(admin);
const bobClient = await client(bob);

/** Substitutes `:param`s of a read's path (REST path under /api/v1). */
const restPath = (read: ReadDefinition, params: Record<string, string>) =>
  '/api/v1' + read.path.replace(/:([A-Za-z0-9_]+)/g, (_, name: string) => encodeURIComponent(params[name]));

/**
 * Real values for a read's path parameters, with no list of resources: each `:param` names an
 * item of the collection whose path precedes it, so the first item of that REST list is used.
 */
const LIST_OF: Record<string, string> = { '/tasks': `/assays/${await first('/assays')}/tasks` };

async function realParams(read: ReadDefinition, key: string): Promise<Record<string, string>> {
  const params: Record<string, string> = {};
  let resolved = '';
  for (const segment of read.path.split('/').filter(Boolean)) {
    if (!segment.startsWith(':')) {
      resolved += '/' + segment;
      continue;
    }
    // Collections without a list route of their own (GET /tasks/{id}) borrow one that lists them.
    const listPath = LIST_OF[resolved] ?? resolved;
    const list = await server.get(`/api/v1${listPath}?size=1`, { key });
    const id = list.body?.content?.[0]?.id;
    if (typeof id !== 'string') throw new Error(`no item under ${resolved} to fill ${segment} of ${read.path}`);
    params[segment.slice(1)] = id;
    resolved += '/' + id;
  }
  return params;
}

const isItemTool = (read: ReadDefinition) => !read.paged;

t.test('tools/list returns exactly the tools of the enabled plugins, annotated read-only', async (t) => {
  const { tools: listed } = await adminClient.listTools();
  const names = listed.map((tool) => tool.name).sort();
  t.equal(SPEC_TOOLS.size, 52);
  t.same(names.filter((name) => !TOOLS.has(name)), [], 'every tool is one the spec names, or search');
  t.same(names, [...TOOLS].sort(), 'with every built-in plugin enabled: the spec\'s 52 tools and search');
  t.equal(names.length, 53);
  for (const name of ['get_organization_user', 'get_project', 'get_user', 'list_organization_users', 'list_projects', 'list_users']) {
    t.ok(names.includes(name), `${name} is listed`);
  }
  t.same(names, tools.map((read) => read.name).sort(), 'one tool per read definition of the registry');
  for (const tool of listed) {
    t.ok(tool.description && tool.description.length > 0, `${tool.name} has a description`);
    t.equal(tool.inputSchema.type, 'object', `${tool.name} takes an object`);
    t.equal(tool.annotations?.readOnlyHint, true, `${tool.name} is read-only`);
    const read = tools.find((r) => r.name === tool.name)!;
    const properties = tool.inputSchema.properties as Record<string, Record<string, unknown>>;
    if (isItemTool(read)) {
      t.same(Object.keys(properties), ['id'], `${tool.name} takes a single parameter`);
      t.match(properties.id, { type: 'string', format: 'uuid' }, `${tool.name} takes a UUID`);
      t.same(tool.inputSchema.required, ['id']);
    } else {
      t.match(properties.page, { type: 'integer', minimum: 0 }, `${tool.name} pages from 0`);
      t.match(properties.size, { type: 'integer', maximum: 100 }, `${tool.name} caps the page size at 100`);
      t.notOk(tool.inputSchema.required?.includes('page') || tool.inputSchema.required?.includes('size'), 'page and size are optional');
    }
  }
});

/** Reads that need arguments besides their path and paging: the REST query and the tool's arguments. */
const REQUIRED: Record<string, { rest: string; tool: Record<string, unknown> }> = {
  search: { rest: 'q=project', tool: { query: 'project' } },
};

t.test('every tool returns exactly the REST JSON of the equivalent GET', async (t) => {
  for (const read of tools) {
    const params = await realParams(read, admin.key);
    const inputs: Record<string, unknown>[] = isItemTool(read) ? [{}] : [{}, { page: 0, size: 2 }, { page: 1, size: 2 }, { page: 99, size: 2 }];
    const required = REQUIRED[read.name];
    for (const input of inputs) {
      const query = [...(required ? [required.rest] : []), ...Object.entries(input).map(([k, v]) => `${k}=${v}`)].join('&');
      const rest = await server.get(restPath(read, params) + (query ? `?${query}` : ''), { key: admin.key });
      t.equal(rest.status, 200, `${read.name} REST ${JSON.stringify(input)}`);
      const result = await callTool(adminClient, read.name, { ...params, ...required?.tool, ...input });
      t.notOk(result.isError, `${read.name} ${JSON.stringify(input)} succeeds`);
      t.same(result.structuredContent, rest.body, `${read.name} ${JSON.stringify(input)}: structuredContent is the REST body`);
      t.equal(resultText(result), rest.text, `${read.name} ${JSON.stringify(input)}: text content is the REST body, byte for byte`);
      if (read.paged && input.size === 2) {
        // A page holds min(size, what is left) items, whatever the plugin and its seed data.
        const page = result.structuredContent as { content: unknown[]; totalElements: number };
        const expected = Math.max(0, Math.min(2, page.totalElements - (input.page as number) * 2));
        t.equal(page.content.length, expected, `${read.name} page ${input.page} holds ${expected} items`);
      }
    }
  }
});

t.test('a record the user may not view, or of another organization, is a not-found tool result', async (t) => {
  const cases: [string, string, string][] = [
    ['get_project', alicePrivate.id, 'PRIVATE project of another member'],
    ['get_project', otherOrgProject.id, 'project of another organization'],
    ['get_user', outsider.userId, 'user of another organization'],
    ['get_organization_user', outsider.organizationUserId, 'membership in another organization'],
  ];
  for (const read of tools.filter(isItemTool)) cases.push([read.name, randomUUID(), 'random UUID']);
  for (const [tool, id, what] of cases) {
    const result = await callTool(bobClient, tool, { id });
    t.equal(result.isError, true, `${tool}: ${what} is an error result`);
    t.match(resultText(result), new RegExp(`not found`, 'i'), `${tool}: ${what} says not found`);
    t.match(resultText(result), id, `${tool}: ${what} names the id`);
    t.equal(result.structuredContent, undefined);
  }
  t.match(resultText(await callTool(bobClient, 'get_project', { id: alicePrivate.id })), /^Project\b/, 'names the resource kind');
  const own = await callTool(await client(alice), 'get_project', { id: alicePrivate.id });
  t.notOk(own.isError, 'the owner sees the same project');
});

t.test('invalid arguments are error results; an unknown tool is a protocol error', async (t) => {
  const tooBig = await callTool(adminClient, 'list_projects', { size: 101 });
  t.equal(tooBig.isError, true, 'size 101');
  t.match(resultText(tooBig), /size/);
  const max = await callTool(adminClient, 'list_projects', { size: 100 });
  t.notOk(max.isError, 'size 100 is allowed');
  t.equal((max.structuredContent as { size: number }).size, 100);
  for (const args of [{ size: 0 }, { page: -1 }, { page: 'x' }, { size: 2.5 }]) {
    t.equal((await callTool(adminClient, 'list_projects', args)).isError, true, `list_projects ${JSON.stringify(args)}`);
  }
  const farPage = await callTool(adminClient, 'list_projects', { page: Number.MAX_SAFE_INTEGER, size: 100 });
  t.equal(farPage.isError, true, 'a page whose offset overflows is refused by the read');
  t.match(resultText(farPage), /page: is too large/, 'with the field message');
  for (const args of [{ id: 'not-a-uuid' }, {}, { id: 42 }]) {
    const result = await callTool(adminClient, 'get_project', args);
    t.equal(result.isError, true, `get_project ${JSON.stringify(args)}`);
    t.match(resultText(result), /id/);
  }
  // Worded as REST words the same mistake (the envelope's details): spec, tool results mirror REST.
  for (const [tool, args, path] of [
    ['get_project', { id: 'not-a-uuid' }, '/api/v1/projects/not-a-uuid'],
    ['list_projects', { size: 0 }, '/api/v1/projects?size=0'],
    ['list_projects', { page: -1 }, '/api/v1/projects?page=-1'],
  ] as const) {
    const rest = await server.get(path, { key: admin.key });
    t.equal(rest.status, 400);
    t.equal(resultText(await callTool(adminClient, tool, args)), `Invalid arguments for ${tool}: ${rest.body.details}`, `${tool} ${JSON.stringify(args)}`);
  }
  // Only the declared arguments reach the read: an undeclared one cannot break or steer it.
  const extra = await callTool(adminClient, 'list_projects', { size: 2, sort: 'bogus', organizationId: otherOrg });
  t.notOk(extra.isError, 'undeclared arguments are ignored');
  t.same(extra.structuredContent, (await server.get('/api/v1/projects?size=2', { key: admin.key })).body);

  const unknown = await adminClient.callTool({ name: 'delete_project', arguments: { id: seeded[0].id } }).then(
    () => undefined,
    (err: unknown) => err,
  );
  t.ok(unknown instanceof McpError, 'unknown tool throws McpError');
  t.equal((unknown as McpError).code, -32602);
  t.match((unknown as McpError).message, /delete_project/);
  t.notMatch((unknown as McpError).message, /MCP error -32602: MCP error/, 'no doubled prefix');
});

async function connectError(headers: Record<string, string>): Promise<unknown> {
  return connectMcp(server.url, { headers }).then(
    async (c) => {
      await c.close();
      return undefined;
    },
    (err: unknown) => err,
  );
}

t.test('without a valid key the connection is refused with 401', async (t) => {
  const expired = await server.key(alice, { expiresAt: new Date(Date.now() - 60_000).toISOString() });
  const revoked = await server.key(alice);
  await server.revoke(revoked.id);
  const cases: [string, Record<string, string>][] = [
    ['no key', {}],
    ['malformed key', { 'X-API-KEY': 'not-a-key' }],
    ['unknown key', { 'X-API-KEY': `key_${'A'.repeat(20)}.${'b'.repeat(43)}` }],
    ['expired key', { 'X-API-KEY': expired.key }],
    ['revoked key', { 'X-API-KEY': revoked.key }],
    ['bearer token', { Authorization: `Bearer ${alice.key}` }],
    ['bearer token next to a valid key', { Authorization: 'Bearer abc', 'X-API-KEY': alice.key }],
  ];
  for (const [what, headers] of cases) {
    const err = await connectError(headers);
    t.ok(err instanceof StreamableHTTPError, `${what}: StreamableHTTPError`);
    t.equal((err as StreamableHTTPError).code, 401, `${what}: 401`);
  }
  const raw = await post(toolsList, { 'x-api-key': revoked.key });
  t.equal(raw.status, 401);
  t.equal(raw.text, '', '401 has an empty body');

  const apiKeyScheme = await connectMcp(server.url, { headers: { Authorization: `ApiKey ${alice.key}` } });
  t.ok((await apiKeyScheme.listTools()).tools.length > 0, 'Authorization: ApiKey works as well');
  await apiKeyScheme.close();
});

t.test('revoking a key stops an agent in mid-conversation', async (t) => {
  const key = await server.key(bob);
  const agent: Client = await connectMcp(server.url, { key: key.key, teardown: (fn) => t.teardown(fn) });
  t.notOk((await callTool(agent, 'list_projects')).isError);
  await server.revoke(key.id);
  const err = await callTool(agent, 'list_projects').then(() => undefined, (e: unknown) => e);
  t.ok(err instanceof StreamableHTTPError, 'the next call fails');
  t.equal((err as StreamableHTTPError).code, 401);
});

t.test('visibility through MCP equals REST', async (t) => {
  // bob is a member of no project: he sees the 4 PUBLIC/PROTECTED ones, not alice's 2 PRIVATE ones.
  const expected: [Member, number][] = [[bob, 4], [alice, 6], [admin, 6], [outsider, 1]];
  for (const [m, total] of expected) {
    const rest = await server.get('/api/v1/projects?size=100', { key: m.key });
    const mcp = await callTool(await client(m), 'list_projects', { size: 100 });
    t.equal(rest.body.totalElements, total);
    t.equal((mcp.structuredContent as { totalElements: number }).totalElements, total, 'same total');
    t.same(mcp.structuredContent, rest.body, 'same page');
  }
});

// ---- Raw HTTP details -------------------------------------------------------------------

const toolsList = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });
const mcpAccept = 'application/json, text/event-stream';

interface Raw {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/** node:https rather than fetch, so that Host can be set freely. */
function raw(method: string, body: string | Buffer | undefined, headers: Record<string, string>, base = server.url): Promise<Raw> {
  const url = new URL(base + '/mcp');
  return new Promise((resolve, reject) => {
    const req = https.request(
      { hostname: url.hostname, port: url.port, path: url.pathname, method, headers, servername: url.hostname },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const post = (body: string | Buffer, headers: Record<string, string>, base = server.url) =>
  raw('POST', body, { 'content-type': 'application/json', accept: mcpAccept, ...headers }, base);

t.test('raw HTTP: methods, headers, parse errors', async (t) => {
  const key = { 'x-api-key': admin.key };
  const ok = await post(toolsList, key);
  t.equal(ok.status, 200, 'a bare tools/list works without initialize (stateless)');
  t.match(JSON.parse(ok.text), { jsonrpc: '2.0', id: 1, result: { tools: Array } });
  t.match(ok.headers['strict-transport-security'], /max-age=\d+/, 'HSTS on the hijacked MCP response');
  t.notOk(ok.headers['mcp-session-id'], 'no session id');

  for (const method of ['GET', 'DELETE', 'PUT']) {
    const res = await raw(method, undefined, { ...key, accept: 'text/event-stream' });
    t.equal(res.status, 405, `${method} /mcp is 405`);
    t.equal(res.headers.allow, 'POST');
    t.match(JSON.parse(res.text), { jsonrpc: '2.0', error: { code: Number } });
  }

  const noAccept = await raw('POST', toolsList, { ...key, 'content-type': 'application/json' });
  t.equal(noAccept.status, 406, 'POST without the Accept header');

  const parse = await post('{"jsonrpc": "2.0", "id": 1, "method": ', key);
  t.equal(parse.status, 400);
  t.match(JSON.parse(parse.text), { jsonrpc: '2.0', error: { code: -32700 }, id: null }, 'parse error is a JSON-RPC error');
  t.notMatch(parse.text, /timestamp|statusCode/, 'not the REST envelope');
  const empty = await post('', key);
  t.match(JSON.parse(empty.text), { jsonrpc: '2.0', error: { code: -32700 } }, 'an empty body too');
  // Bodies the kernel's JSON parser refuses are parse errors too, saying why.
  const notUtf8 = await post(Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":1,"method":"tools/list","x":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]), key);
  t.equal(notUtf8.status, 400);
  t.match(JSON.parse(notUtf8.text), { jsonrpc: '2.0', error: { code: -32700, message: 'Parse error: The body is not valid UTF-8' }, id: null });
  const proto = await post('{"jsonrpc":"2.0","id":1,"method":"tools/list","__proto__":{"x":1}}', key);
  t.match(JSON.parse(proto.text), { jsonrpc: '2.0', error: { code: -32600 }, id: null }, 'parseable JSON the server refuses is an invalid request');
  const deep = await post('['.repeat(100) + ']'.repeat(100), key);
  t.match(JSON.parse(deep.text), { jsonrpc: '2.0', error: { code: -32700, message: /^Parse error: The JSON body is nested deeper than 64/ }, id: null });

  // JSON-RPC 2.0, 5.1 and 6: JSON that is not a request object, or an empty batch, is -32600.
  for (const body of [{ hello: 'world' }, { jsonrpc: '1.0', id: 1, method: 'ping' }, { jsonrpc: '2.0', id: 1.5, method: 'ping' }, []]) {
    const res = await post(JSON.stringify(body), key);
    t.equal(res.status, 400, `${JSON.stringify(body)}: 400`);
    t.match(JSON.parse(res.text), { jsonrpc: '2.0', error: { code: -32600, message: /^Invalid Request/ } }, `${JSON.stringify(body)}: -32600`);
  }
  // Params that do not fit the method's schema: -32602 naming the problem, not -32603 with a validator dump.
  for (const body of [{ jsonrpc: '2.0', id: 3, method: 'initialize' }, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 5 } }]) {
    const res = await post(JSON.stringify(body), key);
    t.equal(res.status, 200);
    const answer = JSON.parse(res.text);
    t.match(answer, { jsonrpc: '2.0', id: 3, error: { code: -32602, message: /^Invalid params: params/ } }, `${body.method}: -32602`);
    t.ok(answer.error.message.length < 200, 'one short line');
  }
  // OPTIONS is authenticated like every method, then refused as the other non-POST ones.
  t.equal((await raw('OPTIONS', undefined, {})).status, 401, 'OPTIONS without a key');
  const options = await raw('OPTIONS', undefined, key);
  t.equal(options.status, 405, 'OPTIONS with a key');
  t.equal(options.headers.allow, 'POST');

  for (const [contentType, message] of [['text/plain', /Content-Type must be application\/json/], ['application/xml', /application\/json/], ['application/json; charset=utf-16', /charset "utf-16"; request bodies are UTF-8 JSON/]] as const) {
    const res = await post(toolsList, { ...key, 'content-type': contentType });
    t.equal(res.status, 415, `${contentType}: content type must be JSON`);
    t.match(JSON.parse(res.text), { jsonrpc: '2.0', error: { code: -32000, message }, id: null });
  }
});

t.test('a single tools/call answers byte for byte as the SDK does (fast path vs SDK path)', async (t) => {
  const key = { 'x-api-key': bob.key };
  // `_meta` is valid MCP but sends the request through the SDK's server and transport (app/mcp/fast-call.ts).
  const call = (id: string | number, name: string, args: unknown, viaSdk: boolean) =>
    post(JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, ...(viaSdk ? { _meta: {} } : {}) } }), key);
  const cases: [string, string | number, string, unknown][] = [
    ['a record', 7, 'get_project', { id: seeded[0].id }],
    ['a page', 'page-1', 'list_projects', { page: 0, size: 3 }],
    ['not viewable', 8, 'get_project', { id: alicePrivate.id }],
    ['invalid arguments', 9, 'get_project', { id: 'not-a-uuid' }],
    ['no arguments', 10, 'list_projects', undefined],
  ];
  for (const [what, id, name, args] of cases) {
    const fast = await call(id, name, args, false);
    const sdk = await call(id, name, args, true);
    t.equal(fast.status, sdk.status, `${what}: status`);
    t.equal(fast.headers['content-type'], sdk.headers['content-type'], `${what}: content type`);
    t.equal(fast.text, sdk.text, `${what}: the same bytes`);
    t.ok(fast.headers['strict-transport-security'], `${what}: HSTS`);
  }
  const rest = await server.get(`/api/v1/projects/${seeded[0].id}`, { key: bob.key });
  const fast = JSON.parse((await call(1, 'get_project', { id: seeded[0].id }, false)).text);
  t.same(fast.result.structuredContent, rest.body, 'structuredContent is the REST body');
  t.equal(fast.result.content[0].text, rest.text, 'and so is the text');
});

t.test('DNS-rebinding protection: a foreign Host or Origin gets 403', async (t) => {
  const key = { 'x-api-key': admin.key };
  const port = new URL(server.url).port;
  t.equal((await post(toolsList, { ...key, host: 'evil.example.com' })).status, 403, 'foreign Host');
  t.equal((await post(toolsList, { ...key, host: `evil.example.com:${port}` })).status, 403, 'foreign Host with port');
  t.equal((await post(toolsList, { ...key, origin: 'http://evil.example.com' })).status, 403, 'foreign Origin');
  t.equal((await post(toolsList, { ...key, origin: 'null' })).status, 403, 'opaque Origin');
  t.equal((await post(toolsList, { host: 'evil.example.com' })).status, 403, 'even without a key');
  t.equal((await post(toolsList, { ...key, origin: 'http://10.6.6.6' })).status, 403, 'Origin of another address');
  t.equal((await post(toolsList, { ...key, host: 'localhost.evil.example.com' })).status, 403, 'a name that merely starts with localhost');
  t.equal((await post(toolsList, { ...key, host: `127.0.0.1:${port}` })).status, 200, 'loopback Host');
  t.equal((await post(toolsList, { ...key, host: `[::1]:${port}` })).status, 200, 'IPv6 loopback Host');
  // Rebinding can only put a name in Host, so a server reached by its address is served.
  t.equal((await post(toolsList, { ...key, host: `10.1.2.3:${port}`, origin: `https://10.1.2.3:${port}` })).status, 200, 'an IP address Host, same-origin');
  t.equal((await post(toolsList, { ...key, origin: `https://localhost:${port}` })).status, 200, 'same-host Origin');
});

t.test('tools come from the enabled plugins; reads can opt out or cap their page size', async (t) => {
  const Item = Type.Object({ id: Type.String(), n: Type.Integer() });
  const items = Array.from({ length: 7 }, (_, n) => ({ id: `item-${n}`, n }));
  const sort = { fields: { n: 'n' }, default: ['n,asc'], tiebreaker: 'n' };
  const extra = definePlugin({
    name: 'widgets',
    version: '1.0.0',
    description: 'Test reads',
    register(ctx) {
      ctx.read(
        defineRead({
          name: 'list_widgets',
          description: 'Widgets, at most 50 a page.',
          path: '/widgets',
          response: Item,
          paged: { sort, maxSize: 50 },
          run: async (_c, _input, page) => ({ items: items.slice(page.offset, page.offset + page.size), total: items.length }),
        }),
      );
      ctx.read(
        defineRead({ name: 'get_widget_secret', description: 'REST only.', path: '/widget-secret', response: Item, tool: false, run: async () => items[0] }),
      );
    },
  });
  const small = await startTestServer(t, { plugins: ['users'], extraPlugins: [extra], env: { LABDATA_MCP_ALLOWED_HOSTS: 'lab.example.com' } });
  const smallOrg = await small.organization();
  const m = await small.member(smallOrg);
  const agent = await connectMcp(small.url, { key: m.key, teardown: (fn) => t.teardown(fn) });
  const { tools: listed } = await agent.listTools();
  t.same(listed.map((tool) => tool.name).sort(), ['get_organization_user', 'get_user', 'list_organization_users', 'list_users', 'list_widgets']);
  const widgets = listed.find((tool) => tool.name === 'list_widgets')!;
  t.match((widgets.inputSchema.properties as Record<string, object>).size, { maximum: 50 }, 'the read\'s own cap is below 100');
  t.equal((await callTool(agent, 'list_widgets', { size: 51 })).isError, true);
  const page = await callTool(agent, 'list_widgets', { page: 1, size: 3 });
  t.same(page.structuredContent, (await small.get('/api/v1/widgets?page=1&size=3', { key: m.key })).body);
  t.equal((await small.get('/api/v1/widget-secret', { key: m.key })).status, 200, 'the opted-out read is still a REST GET');

  const port = new URL(small.url).port;
  const res = (await post(toolsList, { 'x-api-key': m.key, host: `lab.example.com:${port}`, origin: `https://lab.example.com` }, small.url)).status;
  t.equal(res, 200, 'a host named in LABDATA_MCP_ALLOWED_HOSTS is accepted');
});
