import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import SwaggerParser from '@apidevtools/swagger-parser';
import t from 'tap';
import { startTestServer } from '../support/server.ts';

const server = await startTestServer(t);
const member = await server.member(await server.organization());
const k = { key: member.key };

type Operation = {
  operationId?: string;
  summary?: string;
  tags?: string[];
  security?: unknown[];
  responses?: Record<string, any>;
  parameters?: { name: string; in: string }[];
  requestBody?: unknown;
};
type Document = {
  openapi: string;
  info: { license?: { name: string } };
  tags?: { name: string; description?: string }[];
  paths: Record<string, Record<string, Operation>>;
  components: {
    securitySchemes: Record<string, { type: string; in?: string; name?: string }>;
    schemas?: Record<string, any>;
    responses?: Record<string, any>;
    parameters?: Record<string, any>;
  };
  security?: Record<string, string[]>[];
};

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'patch', 'options', 'head', 'trace'];
const operations = (doc: Document) =>
  Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => HTTP_METHODS.includes(method))
      .map(([method, op]) => ({ path, method, op })),
  );

/** The target of a local `$ref` (`#/components/schemas/Project`), or the object itself. */
function resolve(doc: unknown, node: unknown): unknown {
  const ref = (node as { $ref?: string } | undefined)?.$ref;
  if (!ref) return node;
  return ref.slice(2).split('/').reduce((at: any, key) => at?.[key], doc);
}

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
  const sort = (list.parameters ?? []).find((p) => p.name === 'sort') as { description?: string; schema?: { description?: string } };
  t.match(sort.description ?? sort.schema?.description, /Fields: .*name.*; default: createdAt,desc/, 'the sortable fields and the default order are named');
  const ok = list.responses?.['200'] as { content: Record<string, { schema: { $ref: string } }> };
  const schema = resolve(doc, Object.values(ok.content)[0].schema) as { properties?: Record<string, unknown> };
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

t.test('every operation has a summary and declared tags with a description', async (t) => {
  const doc = await fetchDocument();
  const declared = new Map((doc.tags ?? []).map((tag) => [tag.name, tag.description]));
  for (const { path, method, op } of operations(doc)) {
    t.match(op.summary, /^[A-Z]\S.{2,}/, `${method} ${path} has a summary`);
    t.ok(op.tags?.length, `${method} ${path} is tagged`);
    for (const tag of op.tags ?? []) t.match(declared.get(tag), /\w{3,}.*\w{3,}/, `tag ${tag} is declared with a description`);
  }
  t.equal(doc.paths['/api/v1/projects'].get.summary, 'List projects', 'derived from the operation id');
  t.not(declared.get('Projects'), 'Operations tagged Projects.', 'the projects plugin describes its tag');
  t.same(doc.info.license?.name, 'Proprietary', 'the license is stated');
});

t.test('records, pages and the error envelope are named schemas used by $ref', async (t) => {
  const doc = await fetchDocument();
  const schemas = doc.components.schemas ?? {};
  for (const name of ['Project', 'ProjectPage', 'Study', 'StudyPage', 'Assay', 'Task', 'TaskPage', 'StudyCollection', 'StudyCollectionSummaryPage', 'Note', 'ExternalLink', 'GitRepository', 'ErrorEnvelope']) {
    t.equal(schemas[name]?.type, 'object', `components.schemas.${name}`);
  }
  t.same(schemas.ProjectPage.properties.content.items, { $ref: '#/components/schemas/Project' }, 'a page refers to its item');
  t.same(schemas.ErrorEnvelope.required, ['timestamp', 'statusCode', 'error', 'message', 'path']);
  // Every success body (and only those) refers to a named schema: no inlined records.
  for (const { path, method, op } of operations(doc)) {
    for (const [status, response] of Object.entries(op.responses ?? {})) {
      if (!status.startsWith('2') || status === '204') continue;
      const schema = response.content?.['application/json']?.schema;
      t.match(schema?.$ref, /^#\/components\/schemas\/[A-Z]\w+$/, `${method} ${path} ${status} is a $ref`);
      t.ok(resolve(doc, schema), `${schema?.$ref} exists`);
    }
  }
  t.same(doc.paths['/api/v1/projects/{id}'].get.responses!['200'].content['application/json'].schema, { $ref: '#/components/schemas/Project' });
  t.same(doc.paths['/api/v1/projects'].post.responses!['201'].content['application/json'].schema, { $ref: '#/components/schemas/Project' });
});

t.test('conditional requests, retries and Location are documented where the server applies them', async (t) => {
  const doc = await fetchDocument();
  const ref = (name: string) => ({ $ref: `#/components/parameters/${name}` });
  const get = doc.paths['/api/v1/projects/{id}'].get;
  t.same(get.responses!['304'], { $ref: '#/components/responses/NotModified' }, 'a record GET may answer 304');
  t.same(get.responses!['200'].headers?.ETag, { $ref: '#/components/headers/ETag' }, 'and carries an ETag');
  t.ok(get.parameters?.some((p: any) => p.$ref === ref('IfNoneMatch').$ref), 'If-None-Match');
  t.notOk(doc.paths['/api/v1/projects'].get.responses!['304'], 'a page has no ETag');
  for (const method of ['put', 'delete'] as const) {
    const op = doc.paths['/api/v1/projects/{id}'][method];
    t.same(op.responses!['412'], { $ref: '#/components/responses/PreconditionFailed' }, `${method}: 412 on a stale If-Match`);
    t.ok(op.parameters?.some((p: any) => p.$ref === ref('IfMatch').$ref), `${method}: If-Match`);
  }
  const untagged = doc.paths['/api/v1/studies/{studyId}/relationships/{relationshipId}'].delete;
  t.same(untagged.responses!['412'], { $ref: '#/components/responses/PreconditionFailed' }, 'a record without a GET: 412 unless If-Match is *');
  const create = doc.paths['/api/v1/projects'].post;
  t.equal((create as any).requestBody.required, true, 'a body with required fields is required');
  const complete = doc.paths['/api/v1/projects/{projectId}/tasks/{taskId}/complete'].patch;
  t.equal((complete as any).requestBody.required, false, 'an optional body (spec: "optional completion body") is not');
  t.ok(create.parameters?.some((p: any) => p.$ref === ref('IdempotencyKey').$ref), 'creates take Idempotency-Key');
  t.ok(create.responses!['409'], 'a reused Idempotency-Key is a 409');
  t.same(create.responses!['201'].headers?.Location, { $ref: '#/components/headers/Location' }, '201 names Location');
  t.same(Object.keys(doc.components.parameters ?? {}).sort(), ['IdempotencyKey', 'IfMatch', 'IfNoneMatch']);
});

t.test('every operation lists its error responses as references to the shared ones', async (t) => {
  const doc = await fetchDocument();
  const shared = doc.components.responses ?? {};
  t.same(shared.Error.content['application/json'].schema, { $ref: '#/components/schemas/ErrorEnvelope' }, 'errors carry the envelope');
  t.notOk(shared.Unauthorized.content, '401 has an empty body');
  t.notOk(shared.Forbidden.content, '403 has an empty body');
  for (const name of ['TooManyRequests', 'Unavailable']) {
    t.same(shared[name].headers, { 'Retry-After': { $ref: '#/components/headers/RetryAfter' } }, `${name} names Retry-After`);
  }
  const names: Record<string, string> = { '304': 'NotModified', '401': 'Unauthorized', '403': 'Forbidden', '412': 'PreconditionFailed', '429': 'TooManyRequests', '503': 'Unavailable' };
  const expected = (status: string) => ({ $ref: `#/components/responses/${names[status] ?? 'Error'}` });
  for (const { path, method, op } of operations(doc)) {
    const responses = op.responses ?? {};
    const errors = Object.keys(responses).filter((s) => /^[345]/.test(s));
    for (const status of errors) t.same(responses[status], expected(status), `${method} ${path} ${status} refers to the shared response`);
    t.ok(responses['401'], `${method} ${path} documents 401`);
    t.ok(responses['429'] && responses['503'], `${method} ${path} documents 429 and 503`);
    // Path and query parameters can be invalid; the optional conditional headers (shared $refs) cannot.
    if (op.parameters?.some((p) => p.in === 'path' || p.in === 'query') || op.requestBody) t.ok(responses['400'], `${method} ${path} documents 400`);
    const namesId = JSON.stringify(op.requestBody ?? {}).includes('"format":"uuid"');
    if (path.includes('{')) t.ok(responses['404'], `${method} ${path} documents 404`);
    else if (!namesId) t.notOk(responses['404'], `${method} ${path} has no path id nor a body id, no 404`);
    if (op.requestBody) t.ok(responses['413'] && responses['415'], `${method} ${path} documents 413 and 415`);
    if (method === 'get') t.notOk(responses['403'], `${method} ${path}: a read is 404, never 403`);
  }
  const op = (method: string, path: string) => doc.paths['/api/v1' + path][method].responses ?? {};
  t.ok(op('post', '/studies')['403'], 'creating a study needs a contributor');
  t.ok(op('post', '/studies')['404'], 'a study names its project, which may not be there');
  t.notOk(op('post', '/keywords')['404'], 'a keyword names no record');
  t.notOk(op('post', '/projects')['403'], 'any user creates a project');
  t.ok(op('post', '/teams')['403'], 'teams are written by admins');
  t.notOk(op('post', '/collaborators')['403'], 'any user writes collaborators');
  t.ok(op('put', '/projects/{id}')['409'], 'a stale version is a 409');
  t.ok(op('post', '/keywords')['409'], 'a duplicate keyword is a 409');
  t.ok(op('post', '/projects/{id}/access')['409'], 'a repeated grant is a 409');
  t.notOk(op('delete', '/projects/{id}')['409']);
});

t.test('the documented errors are what the server answers', async (t) => {
  const admin = await server.admin(member.organizationId);
  const created = await server.post('/api/v1/projects', { code: 'P-1', name: 'Docs', description: 'x', visibility: 'PROTECTED' }, { key: admin.key });
  t.equal(created.status, 201);
  t.equal((await server.put(`/api/v1/projects/${created.body.id}`, { name: 'Mine' }, k)).status, 403, 'documented 403: viewable, not a contributor');
  t.equal((await server.put(`/api/v1/projects/${created.body.id}`, { name: 'Stale', version: created.body.version + 5 }, { key: admin.key })).status, 409, 'documented 409');
  const missing = await server.get('/api/v1/projects/00000000-0000-4000-8000-000000000000', k);
  t.equal(missing.status, 404);
  t.same(Object.keys(missing.body).sort(), ['error', 'message', 'path', 'statusCode', 'timestamp'], 'the envelope, as ErrorEnvelope says');
});

t.test('Redocly\'s recommended ruleset reports no error', async (t) => {
  const doc = await fetchDocument();
  const dir = t.testdir();
  const file = path.join(dir, 'public-v1.json');
  await writeFile(file, JSON.stringify(doc));
  const cli = path.resolve(import.meta.dirname, '../../node_modules/@redocly/cli/bin/cli.js');
  // No telemetry or update check: the lint is offline and repeatable.
  const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' };
  const args = [cli, 'lint', '--extends', 'recommended', '--format', 'json', '--max-problems', '10000', file];
  const { stdout } = await promisify(execFile)(process.execPath, args, { env, maxBuffer: 64 * 1024 * 1024 }).catch((e) => e);
  const report = JSON.parse(stdout) as { totals: { errors: number; warnings: number }; problems: { ruleId: string; severity: string; message: string }[] };
  t.same(report.problems.filter((p) => p.severity === 'error').map((p) => `${p.ruleId}: ${p.message}`), [], 'no errors');
  t.equal(report.totals.errors, 0);
  // The README ("API documentation") states the warnings: the license has no URL.
  t.same(report.problems.filter((p) => p.severity === 'warn').map((p) => p.ruleId), ['info-license-strict'], 'one known warning');
});

t.test('the explorer page at /docs/swagger-ui (no trailing slash) names assets that load', async (t) => {
  const page = await server.get('/docs/swagger-ui', k);
  t.equal(page.status, 200);
  const assets = [...page.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
  t.ok(assets.length >= 5, 'scripts, styles and icons');
  for (const asset of assets) {
    // Resolved as a browser resolves it against the page's own address.
    const url = new URL(asset, server.url + '/docs/swagger-ui');
    t.match(url.pathname, /^\/docs\/swagger-ui\/static\//, `${asset} is under the explorer`);
    t.equal((await server.get(url.pathname, k)).status, 200, `${url.pathname} loads`);
  }
});
