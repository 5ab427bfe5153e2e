// Issue 12, points 3 and 4: WWW-Authenticate, X-Request-Id, Location, ETag/If-None-Match/If-Match.
import t, { type Test } from 'tap';
import { captureLogs } from '../support/logs.ts';
import { startTestServer, type Response } from '../support/server.ts';
import { whileUncommitted } from '../support/uncommitted.ts';

// The app's JSON log lines, parsed.
const { logger, lines } = captureLogs();

const server = await startTestServer(t, { logger });
const org = await server.organization();
const alice = await server.member(org);
const k = { key: alice.key };

async function createProject(code = 'C-1') {
  const res = await server.post('/api/v1/projects', { code, name: 'Conventions', description: 'd', visibility: 'PROTECTED' }, k);
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.text}`);
  return res;
}

function assertEnvelope(t: Test, res: Response, status: number) {
  t.equal(res.status, status, `status ${status}`);
  t.equal(res.body?.statusCode, status, 'the envelope');
  t.type(res.body?.message, 'string');
}

t.test('every 401 names its scheme in WWW-Authenticate and keeps an empty body', async (t) => {
  const cases: [string, string, Record<string, string>][] = [
    ['GET', '/api/v1/projects', {}],
    ['GET', '/api/v1/projects', { 'x-api-key': 'key_nope.nope' }],
    ['GET', '/api/v1/projects', { authorization: 'Bearer abc' }],
    ['GET', '/api/beta/projects', {}],
    ['GET', '/api/v1/no-such-route', {}],
    ['GET', '/docs/api-docs/public-v1', {}],
    ['POST', '/mcp', { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }],
  ];
  for (const [method, path, headers] of cases) {
    const res = await server.request(method, path, { headers, body: method === 'POST' ? '{}' : undefined });
    t.equal(res.status, 401, `${method} ${path}`);
    t.equal(res.text, '', 'empty body');
    t.equal(res.headers.get('www-authenticate'), 'ApiKey realm="labdata", header="X-API-KEY"');
  }
  const internal = await server.get('/api/i/anything', k);
  t.equal(internal.status, 401);
  t.match(internal.headers.get('www-authenticate'), /^Bearer /, 'the internal mount asks for a bearer token');
});

t.test('X-Request-Id: echoed when safe, generated otherwise, on every response and in the logs', async (t) => {
  const sent = 'trace-42.a:b_C';
  lines.length = 0;
  for (const [path, opts] of [['/api/v1/projects', k], ['/api/v1/projects', {}], ['/api/v1/nothing', k], ['/nothing', {}], ['/healthz', {}], ['/api/v1/projects?size=abc', k]] as const) {
    const res = await server.get(path, { ...opts, headers: { 'x-request-id': sent } });
    t.equal(res.headers.get('x-request-id'), sent, `${path} (${res.status}) echoes the id`);
  }
  const logged = lines.filter((l) => l.reqId === sent);
  t.ok(logged.some((l) => l.msg === 'request completed'), 'the request log lines carry it');
  t.ok(lines.every((l) => typeof l.reqId === 'string'), 'every line has a request id');

  for (const bad of ['x'.repeat(129), 'has space', 'semi;colon', 'ünïcode', '']) {
    const res = await server.get('/api/v1/projects', { ...k, headers: { 'x-request-id': bad } });
    const id = res.headers.get('x-request-id');
    t.not(id, bad, `${JSON.stringify(bad.slice(0, 12))} is replaced`);
    t.match(id, /^[0-9a-f-]{36}$/, 'by a generated UUID');
  }
  const a = (await server.get('/api/v1/projects', k)).headers.get('x-request-id');
  const b = (await server.get('/api/v1/projects', k)).headers.get('x-request-id');
  t.ok(a && b && a !== b, 'a fresh id per request');
  t.equal((await server.get('/api/v1/projects', { ...k, headers: { 'x-request-id': 'x'.repeat(128) } })).headers.get('x-request-id'), 'x'.repeat(128), '128 characters are kept');
});

t.test('201 carries Location, the new record URL on the mount it came in on', async (t) => {
  const project = await createProject('L-1');
  t.equal(project.headers.get('location'), `/api/v1/projects/${project.body.id}`);
  const read = await server.get(project.headers.get('location')!, k);
  t.equal(read.status, 200);
  t.equal(read.body.id, project.body.id);

  const task = await server.post(`/api/v1/projects/${project.body.id}/tasks`, { label: 'Check', status: 'TODO' }, k);
  t.equal(task.status, 201);
  t.equal(task.headers.get('location'), `/api/v1/projects/${project.body.id}/tasks/${task.body.id}`);
  t.equal((await server.get(task.headers.get('location')!, k)).body.id, task.body.id);

  const keyword = await server.post('/api/beta/keywords', { value: 'location-test' }, k);
  t.equal(keyword.status, 201);
  t.equal(keyword.headers.get('location'), `/api/beta/keywords/${keyword.body.id}`);

  const study = await server.post('/api/v1/studies', { name: 'S', description: 'd', projectId: project.body.id }, k);
  t.equal(study.headers.get('location'), `/api/v1/studies/${study.body.id}`);
  t.equal((await server.put(`/api/v1/projects/${project.body.id}`, { name: 'Renamed' }, k)).headers.get('location'), null, 'no Location on a 200');
});

t.test('record reads carry an ETag; If-None-Match answers 304', async (t) => {
  const project = (await createProject('E-1')).body;
  const path = `/api/v1/projects/${project.id}`;
  const first = await server.get(path, k);
  const etag = first.headers.get('etag')!;
  t.match(etag, /^"[A-Za-z0-9_-]+"$/, 'a strong entity tag');
  t.equal((await server.get(path, k)).headers.get('etag'), etag, 'stable while the record is');
  t.equal((await server.get(path.replace('/v1/', '/beta/'), k)).headers.get('etag'), etag, 'the same on the beta mount');

  for (const header of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
    const res = await server.get(path, { ...k, headers: { 'if-none-match': header } });
    t.equal(res.status, 304, `If-None-Match: ${header}`);
    t.equal(res.text, '', 'no body');
    t.equal(res.headers.get('etag'), etag);
  }
  t.equal((await server.get(path, { ...k, headers: { 'if-none-match': '"other"' } })).status, 200);

  t.equal((await server.put(path, { name: 'Changed' }, k)).status, 200);
  const changed = await server.get(path, { ...k, headers: { 'if-none-match': etag } });
  t.equal(changed.status, 200, 'a changed record is sent again');
  t.not(changed.headers.get('etag'), etag, 'with a new tag');
  t.equal(changed.body.name, 'Changed');

  // Not found stays the 404 envelope, conditional or not.
  assertEnvelope(t, await server.get(`/api/v1/projects/${crypto.randomUUID()}`, { ...k, headers: { 'if-none-match': '*' } }), 404);
});

t.test('If-Match on PUT, PATCH and DELETE: 412 with the envelope when stale', async (t) => {
  const project = (await createProject('M-1')).body;
  const path = `/api/v1/projects/${project.id}`;
  const etag = (await server.get(path, k)).headers.get('etag')!;

  const ok = await server.put(path, { name: 'First' }, { ...k, headers: { 'if-match': etag } });
  t.equal(ok.status, 200, 'a current tag lets the update through');
  const stale = await server.put(path, { name: 'Second' }, { ...k, headers: { 'if-match': etag } });
  assertEnvelope(t, stale, 412);
  t.equal(stale.body.error, 'Precondition Failed');
  t.equal((await server.get(path, k)).body.name, 'First', 'the stale update changed nothing');
  assertEnvelope(t, await server.put(path, { name: 'Weak' }, { ...k, headers: { 'if-match': `W/${(await server.get(path, k)).headers.get('etag')}` } }), 412);

  // The body's own stale version is 409 without If-Match (as before) and 412 with it.
  const current = await server.get(path, k);
  t.equal((await server.put(path, { name: 'V', version: current.body.version - 1 }, k)).status, 409);
  assertEnvelope(t, await server.put(path, { name: 'V', version: current.body.version - 1 }, { ...k, headers: { 'if-match': current.headers.get('etag')! } }), 412);
  t.equal((await server.put(path, { name: 'Any' }, { ...k, headers: { 'if-match': '*' } })).status, 200, 'If-Match: * needs the record to exist only');

  // PATCH: the record a sub-operation acts on is the one compared (the study for /move).
  const target = (await createProject('M-2')).body;
  const study = (await server.post('/api/v1/studies', { name: 'S', description: 'd', projectId: project.id }, k)).body;
  const studyTag = (await server.get(`/api/v1/studies/${study.id}`, k)).headers.get('etag')!;
  t.equal((await server.put(`/api/v1/studies/${study.id}`, { name: 'S2' }, k)).status, 200);
  assertEnvelope(t, await server.request('PATCH', `/api/v1/studies/${study.id}/move`, { ...k, body: { projectId: target.id }, headers: { 'if-match': studyTag } }), 412);
  const fresh = (await server.get(`/api/v1/studies/${study.id}`, k)).headers.get('etag')!;
  t.equal((await server.request('PATCH', `/api/v1/studies/${study.id}/move`, { ...k, body: { projectId: target.id }, headers: { 'if-match': fresh } })).status, 200);

  // DELETE
  const doomed = (await createProject('M-3')).body;
  const doomedPath = `/api/v1/projects/${doomed.id}`;
  const doomedTag = (await server.get(doomedPath, k)).headers.get('etag')!;
  t.equal((await server.put(doomedPath, { name: 'Touched' }, k)).status, 200);
  assertEnvelope(t, await server.delete(doomedPath, { ...k, headers: { 'if-match': doomedTag } }), 412);
  t.equal((await server.get(doomedPath, k)).status, 200, 'still there');
  t.equal((await server.delete(doomedPath, { ...k, headers: { 'if-match': (await server.get(doomedPath, k)).headers.get('etag')! } })).status, 204);
  assertEnvelope(t, await server.delete(doomedPath, { ...k, headers: { 'if-match': '*' } }), 404);
});

t.test('If-Match on the POST actions of a record (archive, status, members): 412 when stale', async (t) => {
  const project = (await createProject('A-1')).body;
  const path = `/api/v1/projects/${project.id}`;
  const tag = (await server.get(path, k)).headers.get('etag')!;
  t.equal((await server.put(path, { name: 'Renamed' }, k)).status, 200);
  assertEnvelope(t, await server.post(`${path}/archive?archived=true`, undefined, { ...k, headers: { 'if-match': tag } }), 412);
  t.equal((await server.get(path, k)).body.archived, false, 'the stale archive changed nothing');
  const fresh = (await server.get(path, k)).headers.get('etag')!;
  t.equal((await server.post(`${path}/archive?archived=true`, undefined, { ...k, headers: { 'if-match': fresh } })).status, 200, 'a current tag lets it through');
  assertEnvelope(t, await server.post(`${path}/status`, { status: 'ON_HOLD' }, { ...k, headers: { 'if-match': fresh } }), 412);
  // A create has no tag to compare: If-Match does not apply to it.
  t.equal((await server.post('/api/v1/projects', { code: 'A-2', name: 'n', description: 'd' }, { ...k, headers: { 'if-match': fresh } })).status, 201);
});

t.test('concurrent updates with the same If-Match: one wins, the others get 412', async (t) => {
  const project = (await createProject('R-1')).body;
  const path = `/api/v1/projects/${project.id}`;
  const etag = (await server.get(path, k)).headers.get('etag')!;
  const results = await Promise.all(
    Array.from({ length: 6 }, (_, i) => server.put(path, { name: `Racer ${i}` }, { ...k, headers: { 'if-match': etag } })),
  );
  const statuses = results.map((r) => r.status).sort();
  t.same(statuses, [200, 412, 412, 412, 412, 412], 'exactly one update went through');
  const winner = results.find((r) => r.status === 200)!;
  t.equal((await server.get(path, k)).body.name, winner.body.name);
});

t.test('If-Match holds until the write commits: a change committed after the check is a 412, version or not', async (t) => {
  // The DELETE's check passes on the record as committed; the change held open meanwhile commits
  // while the DELETE waits for the row, so the DELETE must find its tag stale (no version in a DELETE).
  const project = (await createProject('R-2')).body;
  const path = `/api/v1/projects/${project.id}`;
  const etag = (await server.get(path, k)).headers.get('etag')!;
  const del = await whileUncommitted(server, 'update project set name = ?, version = version + 1 where id = ?', ['Renamed meanwhile', project.id], () =>
    server.delete(path, { ...k, headers: { 'if-match': etag } }));
  assertEnvelope(t, del, 412);
  t.equal((await server.get(path, k)).body.name, 'Renamed meanwhile', 'the record is still there, with the change');

  // The same for an organization-level record (a collaborator).
  const admin = await server.admin(org);
  const collaborator = (await server.post('/api/v1/collaborators', { label: 'Held open' }, { key: admin.key })).body;
  const cPath = `/api/v1/collaborators/${collaborator.id}`;
  const cTag = (await server.get(cPath, { key: admin.key })).headers.get('etag')!;
  const cDel = await whileUncommitted(server, 'update collaborator set label = ?, version = version + 1 where id = ?', ['Changed meanwhile', collaborator.id], () =>
    server.delete(cPath, { key: admin.key, headers: { 'if-match': cTag } }));
  assertEnvelope(t, cDel, 412);
  t.equal((await server.get(cPath, { key: admin.key })).body.label, 'Changed meanwhile');
});

t.test('with rate limiting off, no rate-limit headers', async (t) => {
  const res = await server.get('/api/v1/projects', k);
  t.equal(res.headers.get('ratelimit'), null);
  t.equal(res.headers.get('ratelimit-policy'), null);
});
