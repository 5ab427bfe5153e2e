import t, { type Test } from 'tap';
import { startTestServer, type Response } from '../support/server.ts';

const server = await startTestServer(t);
const org = await server.organization();
const alice = await server.member(org);
const bob = await server.member(org);
const k = { key: alice.key };

async function createProject(extra: Record<string, unknown> = {}): Promise<{ id: string; version: number }> {
  const res = await server.post('/api/v1/projects', { code: 'E-1', name: 'Errors', description: 'x', ...extra }, k);
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.text}`);
  return res.body;
}

const project = await createProject({ visibility: 'PROTECTED' });

/** Checks the spec's envelope; `validation` also requires `details` and `errors`. */
function assertEnvelope(t: Test, res: Response, status: number, path: string, validation = false) {
  t.equal(res.status, status, `status ${status}`);
  t.match(res.headers.get('content-type'), /^application\/json/);
  const keys = ['timestamp', 'statusCode', 'error', 'message', 'path', ...(validation ? ['details', 'errors'] : [])];
  t.same(Object.keys(res.body ?? {}).sort(), keys.sort(), 'exactly the envelope fields');
  t.equal(res.body.statusCode, status);
  t.equal(res.body.path, path);
  t.type(res.body.message, 'string');
  t.ok(res.body.message.length > 0);
  t.ok(!Number.isNaN(Date.parse(res.body.timestamp)), 'timestamp is a date-time');
  t.match(res.body.timestamp, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/);
  assertNoInternals(t, res);
  if (validation) {
    t.ok(Array.isArray(res.body.errors) && res.body.errors.length > 0, 'errors lists the violations');
    for (const e of res.body.errors) t.same(Object.keys(e).sort(), ['field', 'message']);
    t.type(res.body.details, 'string');
  }
}

function assertNoInternals(t: Test, res: Response) {
  t.notMatch(res.text, /\bat .+\.(ts|js):\d+/, 'no stack trace');
  t.notMatch(res.text, /node_modules|\/work\/|file:\/\//, 'no file paths');
  t.notMatch(res.text, /\b(select|insert|update|delete)\b.+\b(from|into|set|where)\b/i, 'no SQL text');
  t.notMatch(res.text, /postgres|mikro-?orm|duplicate key|violates|syntax error at/i, 'no database wording');
}

t.test('unknown routes are 404 with the envelope', async (t) => {
  assertEnvelope(t, await server.get('/api/v1/no-such-resource', k), 404, '/api/v1/no-such-resource');
  assertEnvelope(t, await server.get('/api/v1/projects/x/y/z', k), 404, '/api/v1/projects/x/y/z');
  assertEnvelope(t, await server.request('PATCH', '/api/v1/projects', k), 404, '/api/v1/projects');
  assertEnvelope(t, await server.get('/nothing?x=1'), 404, '/nothing');
  const res = await server.get('/api/v1/no-such-resource?page=1', k);
  t.equal(res.body.error, 'Not Found');
  t.equal(res.body.path, '/api/v1/no-such-resource', 'the path carries no query string');
});

t.test('a record that does not exist: 404 naming the resource kind and id', async (t) => {
  const id = crypto.randomUUID();
  const res = await server.get(`/api/v1/projects/${id}`, k);
  assertEnvelope(t, res, 404, `/api/v1/projects/${id}`);
  t.equal(res.body.error, 'Not Found');
  t.match(res.body.message, 'Project');
  t.match(res.body.message, id);
  for (const [path, kind] of [[`/api/v1/users/${id}`, 'User'], [`/api/v1/organization-users/${id}`, 'OrganizationUser']]) {
    const r = await server.get(path, k);
    assertEnvelope(t, r, 404, path);
    t.match(r.body.message, kind);
    t.match(r.body.message, id);
  }
  const put = await server.put(`/api/v1/projects/${id}`, { name: 'x' }, k);
  assertEnvelope(t, put, 404, `/api/v1/projects/${id}`);
  t.match(put.body.message, id);
  const del = await server.delete(`/api/v1/projects/${id}`, k);
  assertEnvelope(t, del, 404, `/api/v1/projects/${id}`);
});

t.test('malformed JSON is 400 with the envelope', async (t) => {
  for (const body of ['{"code": "x",', '{bad json}', 'null x', '']) {
    const res = await server.request('POST', '/api/v1/projects', { ...k, body, headers: { 'content-type': 'application/json' } });
    assertEnvelope(t, res, 400, '/api/v1/projects', res.body?.errors !== undefined);
    t.equal(res.body.error, 'Bad Request');
  }
  const put = await server.request('PUT', `/api/v1/projects/${project.id}`, { ...k, body: '{"name":', headers: { 'content-type': 'application/json' } });
  assertEnvelope(t, put, 400, `/api/v1/projects/${project.id}`);
  t.match(put.body.message, /JSON/i);
});

t.test('a body that is not an object is a validation error', async (t) => {
  for (const body of ['[]', '"text"', '42', 'null']) {
    const res = await server.request('POST', '/api/v1/projects', { ...k, body, headers: { 'content-type': 'application/json' } });
    t.equal(res.status, 400, body);
    t.equal(res.body.statusCode, 400);
    assertNoInternals(t, res);
  }
});

t.test('a content type other than JSON is 415 with the envelope', async (t) => {
  for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml']) {
    const res = await server.request('POST', '/api/v1/projects', { ...k, body: 'code=x&name=y', headers: { 'content-type': type } });
    assertEnvelope(t, res, 415, '/api/v1/projects');
    t.equal(res.body.error, 'Unsupported Media Type');
  }
  // JSON is UTF-8 on the wire (spec, "Content type"): another declared charset is refused, not misread.
  const body = JSON.stringify({ code: 'C', name: 'n', description: 'd' });
  for (const type of ['application/json; charset=utf-16', 'application/json;charset="ISO-8859-1"', 'application/json; charset=bogus']) {
    const res = await server.request('POST', '/api/v1/projects', { ...k, body, headers: { 'content-type': type } });
    assertEnvelope(t, res, 415, '/api/v1/projects');
    t.match(res.body.message, /charset .*UTF-8 JSON/, type);
  }
  t.equal((await server.sql('select count(*)::int as n from project'))[0].n, 1, 'nothing was created');
  for (const type of ['application/json; charset=utf-8', 'application/json;charset="UTF-8"', 'application/json; charset=utf8', 'application/json; charset=US-ASCII']) {
    t.equal((await server.request('POST', '/api/v1/projects', { ...k, body, headers: { 'content-type': type } })).status, 201, type);
  }
  // An empty body is no body, whatever its declared charset: the route's own answer.
  const empty = await server.request('POST', '/api/v1/projects', { ...k, body: '', headers: { 'content-type': 'application/json; charset=utf-16' } });
  t.equal(empty.status, 400);
  t.equal(empty.body.message, 'Validation failed');
});

t.test('invalid query parameters are 400 validation errors naming the parameter', async (t) => {
  const cases: [string, string][] = [
    ['/api/v1/projects?size=abc', 'size'],
    ['/api/v1/projects?page=1.5', 'page'],
    ['/api/v1/projects?size=-3', 'size'],
    [`/api/v1/projects/${project.id}/archive?archived=maybe`, 'archived'],
  ];
  for (const [url, field] of cases) {
    const method = url.includes('/archive') ? 'POST' : 'GET';
    const res = await server.request(method, url, k);
    assertEnvelope(t, res, 400, url.split('?')[0], true);
    t.ok(res.body.errors.some((e: { field: string }) => e.field === field), `${url}: errors name ${field}`);
    t.match(res.body.details, field);
  }
});

t.test('path ids that are not UUIDs are 400 validation errors', async (t) => {
  for (const [method, path] of [
    ['GET', '/api/v1/projects/not-a-uuid'],
    ['GET', '/api/v1/projects/123'],
    ['PUT', '/api/v1/projects/not-a-uuid'],
    ['DELETE', '/api/v1/projects/not-a-uuid'],
    ['GET', '/api/v1/users/x'],
    ['GET', '/api/v1/organization-users/x'],
  ]) {
    const res = await server.request(method, path, { ...k, body: method === 'PUT' ? { name: 'x' } : undefined });
    assertEnvelope(t, res, 400, path, true);
    t.same(res.body.errors, [{ field: 'id', message: 'must be a UUID' }], `${method} ${path}`);
  }
});

t.test('body validation failures list every violation', async (t) => {
  const res = await server.post('/api/v1/projects', { code: '', name: { first: 'x' }, visibility: 'SECRET', extra: true }, k);
  assertEnvelope(t, res, 400, '/api/v1/projects', true);
  const fields = res.body.errors.map((e: { field: string }) => e.field);
  for (const f of ['code', 'name', 'description', 'visibility']) t.ok(fields.includes(f), `names ${f}`);
  for (const e of res.body.errors) t.match(res.body.details, e.field);
  // An enum's message names the values it takes.
  t.same(res.body.errors.find((e: { field: string }) => e.field === 'visibility'), { field: 'visibility', message: 'must be one of PUBLIC, PROTECTED, PRIVATE' });
});

t.test('401 and 403 have empty bodies', async (t) => {
  const unauthorized = await server.get(`/api/v1/projects/${project.id}`);
  t.equal(unauthorized.status, 401);
  t.equal(unauthorized.text, '');
  const forbidden = await server.put(`/api/v1/projects/${project.id}`, { name: 'not mine' }, { key: bob.key });
  t.equal(forbidden.status, 403, 'bob views the PROTECTED project but does not contribute');
  t.equal(forbidden.text, '');
  const forbiddenDelete = await server.delete(`/api/v1/projects/${project.id}`, { key: bob.key });
  t.equal(forbiddenDelete.status, 403);
  t.equal(forbiddenDelete.text, '');
});

t.test('an update with a stale version is 409 with the envelope', async (t) => {
  const p = await createProject();
  const first = await server.put(`/api/v1/projects/${p.id}`, { name: 'first', version: p.version }, k);
  t.equal(first.status, 200);
  t.equal(first.body.version, p.version + 1, 'the version moves on');
  const stale = await server.put(`/api/v1/projects/${p.id}`, { name: 'second', version: p.version }, k);
  assertEnvelope(t, stale, 409, `/api/v1/projects/${p.id}`);
  t.equal(stale.body.error, 'Conflict');
  const now = await server.get(`/api/v1/projects/${p.id}`, k);
  t.equal(now.body.name, 'first', 'the stale update changed nothing');
  const fresh = await server.put(`/api/v1/projects/${p.id}`, { name: 'third', version: first.body.version }, k);
  t.equal(fresh.status, 200);
});

t.test('concurrent updates never end in a server error', async (t) => {
  const p = await createProject();
  const results = await Promise.all(
    Array.from({ length: 8 }, (_, i) => server.put(`/api/v1/projects/${p.id}`, { name: `name ${i}`, description: `d ${i}` }, k)),
  );
  for (const res of results) {
    t.ok(res.status === 200 || res.status === 409, `status ${res.status}`);
    if (res.status === 409) assertEnvelope(t, res, 409, `/api/v1/projects/${p.id}`);
  }
  t.ok(results.some((r) => r.status === 200), 'at least one update wins');
  const withVersion = await Promise.all(
    Array.from({ length: 4 }, (_, i) => server.put(`/api/v1/projects/${p.id}`, { name: `v ${i}`, version: results.filter((r) => r.status === 200).length + p.version }, k)),
  );
  for (const res of withVersion) t.ok(res.status === 200 || res.status === 409, `versioned: status ${res.status}`);
  const after = await server.get(`/api/v1/projects/${p.id}`, k);
  t.equal(after.status, 200);
  t.ok(after.body.version > p.version);
});

t.test('a NUL character (which PostgreSQL cannot store) is a validation error', async (t) => {
  const res = await server.post('/api/v1/projects', { code: 'x\u0000y', name: 'nul', description: 'x' }, k);
  assertEnvelope(t, res, 400, '/api/v1/projects', true);
  t.same(res.body.errors, [{ field: 'code', message: 'must not contain NUL characters' }]);
  const put = await server.put(`/api/v1/projects/${project.id}`, { name: 'a\u0000' }, k);
  assertEnvelope(t, put, 400, `/api/v1/projects/${project.id}`, true);
  t.same(put.body.errors, [{ field: 'name', message: 'must not contain NUL characters' }]);
  // Inside a body's lists the item is named by its index, as the schema validator names it.
  const admin = await server.admin(org);
  const fields = [{ name: 'c', displayName: 'C', type: 'CHOICE', options: ['a', 'b\u0000'] }];
  const nested = await server.post('/api/v1/assay-types', { name: 'NUL inside', fields }, { key: admin.key });
  assertEnvelope(t, nested, 400, '/api/v1/assay-types', true);
  t.same(nested.body.errors, [{ field: 'fields.0.options.1', message: 'must not contain NUL characters' }]);
});

t.test('a nullable body names only what is wrong inside it, not its null alternative', async (t) => {
  const task = await server.post(`/api/v1/projects/${project.id}/tasks`, { label: 'Weigh' }, k);
  t.equal(task.status, 201, task.text);
  const res = await server.request('PATCH', `/api/v1/projects/${project.id}/tasks/${task.body.id}/complete`, { ...k, body: { status: 'TODO' } });
  assertEnvelope(t, res, 400, `/api/v1/projects/${project.id}/tasks/${task.body.id}/complete`, true);
  t.same(res.body.errors.map((e: { field: string }) => e.field), ['status'], 'no "body: must be null" nor "must match a schema in anyOf"');
});

t.test('text that would not be stored as sent is a 400: lone surrogates, invalid UTF-8', async (t) => {
  // JSON can spell a lone UTF-16 surrogate; UTF-8 cannot carry one (it would become U+FFFD).
  for (const [method, path] of [['POST', '/api/v1/projects'], ['PUT', `/api/v1/projects/${project.id}`]] as const) {
    const res = await server.request(method, path, { ...k, body: '{"code":"C","name":"\\udfff","description":"d"}' });
    assertEnvelope(t, res, 400, path, true);
    t.same(res.body.errors, [{ field: 'name', message: 'must be valid Unicode (no lone surrogates)' }], `${method}: lone surrogate`);
  }
  t.equal((await server.post('/api/v1/projects', { code: 'C', name: 'pair \ud83e\uddea ok', description: 'd' }, k)).status, 201, 'a surrogate pair is fine');
  const bytes = Buffer.concat([Buffer.from('{"code":"C","name":"bad '), Buffer.from([0xff, 0xfe, 0xc3, 0x28]), Buffer.from('","description":"d"}')]);
  const res = await fetch(server.url + '/api/v1/projects', { method: 'POST', headers: { 'x-api-key': k.key, 'content-type': 'application/json' }, body: bytes });
  t.equal(res.status, 400, 'invalid UTF-8 bytes');
  t.match(await res.json(), { statusCode: 400, message: /UTF-8/ });
  const stored = await server.sql<{ n: number }>(`select count(*)::int as n from project where name like 'bad %'`);
  t.equal(stored[0].n, 0, 'nothing stored');
});

t.test('awkward input never leaks internals', async (t) => {
  const cases: Response[] = [
    await server.post('/api/v1/projects', { code: 'x\u0000y', name: 'nul', description: 'x' }, k),
    await server.post('/api/v1/projects', { code: 'x', name: 'y'.repeat(100_000), description: 'x' }, k),
    await server.get(`/api/v1/projects?sort=${encodeURIComponent("name;drop table project,asc")}`, k),
    await server.get(`/api/v1/projects?sort=${encodeURIComponent("name,asc;select 1")}`, k),
    await server.get('/api/v1/projects?page=99999999999999999999', k),
    await server.get('/api/v1/projects?page=999999999999', k),
    await server.put(`/api/v1/projects/${project.id}`, { version: 2 ** 40 }, k),
  ];
  for (const res of cases) {
    t.ok(res.status < 500, `not a server error (${res.status}: ${res.text.slice(0, 120)})`);
    t.ok(res.status >= 400 || res.status === 200 || res.status === 201, `status ${res.status}`);
    if (res.status >= 400) assertNoInternals(t, res);
  }
});
