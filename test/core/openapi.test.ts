import SwaggerParser from '@apidevtools/swagger-parser';
import t from 'tap';
import { startTestServer } from '../support/server.ts';

const server = await startTestServer(t);
const member = await server.member(await server.organization());
const k = { key: member.key };

type Operation = { operationId?: string; security?: unknown[]; responses?: Record<string, unknown>; parameters?: { name: string; in: string }[] };
type Document = {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  components: { securitySchemes: Record<string, { type: string; in?: string; name?: string }> };
  security?: Record<string, string[]>[];
};

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'patch', 'options', 'head', 'trace'];
const operations = (doc: Document) =>
  Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => HTTP_METHODS.includes(method))
      .map(([method, op]) => ({ path, method, op })),
  );

async function fetchDocument(): Promise<Document> {
  const res = await server.get('/docs/api-docs/public-v1', k);
  if (res.status !== 200) throw new Error(`docs: ${res.status}`);
  return res.body;
}

t.test('the document is behind the API key', async (t) => {
  const res = await server.get('/docs/api-docs/public-v1');
  t.equal(res.status, 401);
  t.equal(res.text, '');
  const ok = await server.get('/docs/api-docs/public-v1', k);
  t.equal(ok.status, 200);
  t.match(ok.headers.get('content-type'), /^application\/json/);
});

t.test('it is a valid OpenAPI 3 document', async (t) => {
  const doc = await fetchDocument();
  t.match(doc.openapi, /^3\.\d+\.\d+$/);
  // validate() dereferences in place: give it a copy.
  await t.resolves(SwaggerParser.validate(structuredClone(doc) as never), 'swagger-parser validates it');
});

t.test('only the public /api/v1 surface is described', async (t) => {
  const doc = await fetchDocument();
  const paths = Object.keys(doc.paths);
  t.ok(paths.length > 0);
  for (const path of paths) t.match(path, /^\/api\/v1\//, path);
  for (const hidden of ['/api/beta', '/api/i', '/mcp', '/healthz', '/readyz', '/docs']) {
    t.notOk(paths.some((p) => p.startsWith(hidden)), `no ${hidden}`);
  }
  // Every registered operation is there, with its method.
  const listed = new Set(operations(doc).map((o) => `${o.method.toUpperCase()} ${o.path}`));
  const openApiPath = (p: string) => '/api/v1' + p.replace(/:([A-Za-z]+)/g, '{$1}');
  for (const r of server.kernel.reads) t.ok(listed.has(`GET ${openApiPath(r.path)}`), `GET ${r.path}`);
  for (const w of server.kernel.writes) t.ok(listed.has(`${w.method} ${openApiPath(w.path)}`), `${w.method} ${w.path}`);
  t.equal(listed.size, server.kernel.reads.length + server.kernel.writes.length, 'nothing else (no HEAD duplicates)');
});

t.test('the API-key security scheme is declared and applies to every operation', async (t) => {
  const doc = await fetchDocument();
  const schemes = Object.entries(doc.components.securitySchemes);
  const xApiKey = schemes.find(([, s]) => s.type === 'apiKey' && s.in === 'header' && s.name === 'X-API-KEY');
  t.ok(xApiKey, 'an apiKey scheme in header X-API-KEY');
  const names = new Set(schemes.map(([name]) => name));
  for (const { path, method, op } of operations(doc)) {
    const security = (op.security ?? doc.security) as Record<string, string[]>[] | undefined;
    t.ok(security && security.length > 0, `${method} ${path} requires a key`);
    for (const requirement of security ?? []) for (const name of Object.keys(requirement)) t.ok(names.has(name), `${name} is declared`);
    t.ok(security?.some((r) => xApiKey![0] in r), `${method} ${path} accepts X-API-KEY`);
  }
});

t.test('every operation has a unique operationId; the reads\' equal the MCP tool names', async (t) => {
  const doc = await fetchDocument();
  const ops = operations(doc);
  const ids = ops.map((o) => o.op.operationId);
  for (const { path, method, op } of ops) t.match(op.operationId, /^[a-z][a-z0-9_]*$/, `${method} ${path} has an operationId`);
  t.equal(new Set(ids).size, ids.length, 'operationIds are unique');

  const rpc = await server.post('/mcp', { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }, { ...k, headers: { accept: 'application/json, text/event-stream' } });
  t.equal(rpc.status, 200);
  const toolNames: string[] = rpc.body.result.tools.map((tool: { name: string }) => tool.name).sort();
  const readIds = ops.filter((o) => o.method === 'get').map((o) => o.op.operationId!);
  const toolReads = server.kernel.reads.filter((r) => r.tool !== false).map((r) => r.name);
  t.same(toolNames, [...toolReads].sort(), 'the tools are the reads');
  for (const name of toolNames) t.ok(readIds.includes(name), `tool ${name} is a GET operationId`);
  for (const r of server.kernel.reads) {
    const op = ops.find((o) => o.method === 'get' && o.path === '/api/v1' + r.path.replace(/:([A-Za-z]+)/g, '{$1}'));
    t.equal(op?.op.operationId, r.name, `${r.path} is ${r.name}`);
  }
  for (const w of server.kernel.writes) t.ok(ids.includes(w.operationId), `write ${w.operationId}`);
});

t.test('paged reads document page, size and sort, and the page envelope', async (t) => {
  const doc = await fetchDocument();
  const list = doc.paths['/api/v1/projects'].get;
  const params = (list.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name).sort();
  t.same(params, ['page', 'size', 'sort']);
  const ok = list.responses?.['200'] as { content: Record<string, { schema: { properties?: Record<string, unknown> } }> };
  const schema = Object.values(ok.content)[0].schema;
  for (const field of ['content', 'totalElements', 'totalPages', 'size', 'number', 'first', 'last', 'empty', 'pageable']) {
    t.ok(schema.properties && field in schema.properties, `response documents ${field}`);
  }
  const get = doc.paths['/api/v1/projects/{id}'].get;
  t.ok(get.parameters?.some((p) => p.in === 'path' && p.name === 'id'), 'the id is a path parameter');
});

t.test('the explorer is behind the key too', async (t) => {
  const paths = ['/docs/swagger-ui', '/docs/swagger-ui/', '/docs/swagger-ui/static/swagger-ui.css', '/docs/swagger-ui/static/swagger-ui-bundle.js', '/docs/swagger-ui/static/swagger-initializer.js'];
  for (const path of paths) {
    const res = await server.get(path);
    t.equal(res.status, 401, `${path} without a key`);
    t.equal(res.text, '');
  }
  const page = await server.get('/docs/swagger-ui', k);
  t.equal(page.status, 200);
  t.match(page.headers.get('content-type'), /^text\/html/);
  t.match(page.text, /<html/i);
  t.match(page.text, /swagger/i);
  for (const path of paths.slice(2)) t.equal((await server.get(path, k)).status, 200, `${path} with a key`);
  const initializer = await server.get('/docs/swagger-ui/static/swagger-initializer.js', k);
  t.match(initializer.text, '/docs/api-docs/public-v1', 'the explorer loads the public-v1 document');
});
