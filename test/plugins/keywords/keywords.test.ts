import t from 'tap';
import { startTestServer, testCast, type Member } from '../../support/server.ts';
import { callTool, connectMcp, expectToolMatchesRest } from '../../support/mcp.ts';

const server = await startTestServer(t, { plugins: ['users', 'keywords'] });
const { org, other, admin, alice, bob, outsider } = await testCast(server);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

async function keyword(owner: Member, value: string) {
  const res = await server.post('/api/v1/keywords', { value }, { key: owner.key });
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.text}`);
  return res.body as { id: string; value: string };
}

t.test('create: 201 with the keyword, value trimmed, activity keyword.created (ADMINISTRATIVE)', async (t) => {
  const res = await server.post('/api/v1/keywords', { value: '  Mass spectrometry ' }, { key: alice.key });
  t.equal(res.status, 201);
  t.same(Object.keys(res.body).sort(), ['category', 'createdAt', 'createdById', 'id', 'organizationId', 'value']);
  t.match(res.body, { id: UUID, organizationId: org, value: 'Mass spectrometry', category: null, createdById: alice.organizationUserId });
  t.equal(new Date(res.body.createdAt).toISOString(), res.body.createdAt, 'createdAt is ISO 8601 UTC');
  const rows = await server.sql<Record<string, unknown>>(
    `select event_type, category, data, project_id, study_id, assay_id, organization_user_id, organization_id
       from activity where event_type = 'keyword.created' and data->>'value' = ?`,
    ['Mass spectrometry'],
  );
  t.same(rows, [
    {
      event_type: 'keyword.created',
      category: 'ADMINISTRATIVE',
      data: { value: 'Mass spectrometry' },
      project_id: null,
      study_id: null,
      assay_id: null,
      organization_user_id: alice.organizationUserId,
      organization_id: org,
    },
  ]);
});

t.test('create: an optional category (trimmed; null when omitted), returned on every read', async (t) => {
  const res = await server.post('/api/v1/keywords', { value: 'BRCA1', category: ' Gene ' }, { key: alice.key });
  t.equal(res.status, 201);
  t.match(res.body, { value: 'BRCA1', category: 'Gene' });
  t.match((await server.get(`/api/v1/keywords/${res.body.id}`, { key: bob.key })).body, { value: 'BRCA1', category: 'Gene' });
  const listed = (await server.get('/api/v1/keywords?size=200', { key: bob.key })).body.content.find((k: { id: string }) => k.id === res.body.id);
  t.equal(listed.category, 'Gene');
  t.equal((await server.post('/api/v1/keywords', { value: 'TP53', category: null }, { key: alice.key })).body.category, null, 'null: no category');
  for (const category of ['', '  ', 7, 'x'.repeat(256)]) {
    const bad = await server.post('/api/v1/keywords', { value: `k-${String(category).length}-${typeof category}`, category }, { key: alice.key });
    t.equal(bad.status, 400, JSON.stringify(category));
    t.equal(bad.body.errors[0].field, 'category');
  }
  const sameValue = await server.post('/api/v1/keywords', { value: 'BRCA1', category: 'Protein' }, { key: alice.key });
  t.equal(sameValue.status, 409, 'the value alone stays unique: another category does not make a new keyword');
});

t.test('create: value is required, a non-blank string of at most 255 characters', async (t) => {
  const cases: [unknown, string][] = [
    [{}, 'is required'],
    [{ value: '' }, 'must not be blank'],
    [{ value: '   ' }, 'must not be blank'],
  ];
  for (const [body, message] of cases) {
    const res = await server.post('/api/v1/keywords', body, { key: alice.key });
    t.equal(res.status, 400, JSON.stringify(body));
    t.match(res.body, { statusCode: 400, error: 'Bad Request', message: 'Validation failed', path: '/api/v1/keywords' });
    t.same(res.body.errors, [{ field: 'value', message }]);
  }
  const number = await server.post('/api/v1/keywords', { value: 42 }, { key: alice.key });
  t.equal(number.status, 400, 'a number is not coerced to a string');
  t.equal(number.body.errors[0].field, 'value');
  const long = await server.post('/api/v1/keywords', { value: 'x'.repeat(256) }, { key: alice.key });
  t.equal(long.status, 400);
  t.equal(long.body.errors[0].field, 'value');
  t.equal((await server.post('/api/v1/keywords', { value: 'y'.repeat(255) }, { key: alice.key })).status, 201, '255 characters are fine');
  const malformed = await server.post('/api/v1/keywords', '{"value":', { key: alice.key });
  t.equal(malformed.status, 400);
  t.equal(malformed.body.statusCode, 400);
});

t.test('value is unique per organization (409 with the envelope) and case-sensitive', async (t) => {
  const first = await keyword(alice, 'pH');
  const dup = await server.post('/api/v1/keywords', { value: 'pH' }, { key: bob.key });
  t.equal(dup.status, 409);
  t.match(dup.body, { statusCode: 409, error: 'Conflict', message: 'A keyword with value "pH" already exists', path: '/api/v1/keywords' });
  t.equal((await server.post('/api/v1/keywords', { value: ' pH ' }, { key: admin.key })).status, 409, 'surrounding white space does not make a new value');
  const upper = await server.post('/api/v1/keywords', { value: 'PH' }, { key: alice.key });
  t.equal(upper.status, 201, 'another case is another value');
  t.not(upper.body.id, first.id);
  const elsewhere = await server.post('/api/v1/keywords', { value: 'pH' }, { key: outsider.key });
  t.equal(elsewhere.status, 201, 'another organization may have the same value');
  t.equal(elsewhere.body.organizationId, other);
  const rows = await server.sql(`select id from keyword where organization_id = ? and value = 'pH'`, [org]);
  t.equal(rows.length, 1);
  const events = await server.sql(`select id from activity where event_type = 'keyword.created' and data->>'value' = 'pH' and organization_id = ?`, [org]);
  t.equal(events.length, 1, 'a refused duplicate records no activity');
});

t.test('concurrent creation of one value: exactly one 201, the rest 409, one row', async (t) => {
  const members = [alice, bob, admin, alice, bob, admin, alice, bob];
  const results = await Promise.all(members.map((m) => server.post('/api/v1/keywords', { value: 'Concurrent' }, { key: m.key })));
  const statuses = results.map((r) => r.status).sort();
  t.same(statuses, [201, 409, 409, 409, 409, 409, 409, 409]);
  for (const r of results.filter((r) => r.status === 409)) t.match(r.body, { statusCode: 409, message: /already exists/ });
  const rows = await server.sql(`select id from keyword where organization_id = ? and value = 'Concurrent'`, [org]);
  t.equal(rows.length, 1);
  const created = results.find((r) => r.status === 201)!;
  t.equal(rows[0].id, created.body.id);
  const events = await server.sql(`select id from activity where event_type = 'keyword.created' and data->>'value' = 'Concurrent'`);
  t.equal(events.length, 1);
});

t.test('get: any user of the organization; another organization or an unknown id is a 404', async (t) => {
  const k = await keyword(alice, 'Get me');
  for (const m of [alice, bob, admin]) {
    const res = await server.get(`/api/v1/keywords/${k.id}`, { key: m.key });
    t.equal(res.status, 200);
    t.same(res.body, k);
  }
  const foreign = await server.get(`/api/v1/keywords/${k.id}`, { key: outsider.key });
  t.equal(foreign.status, 404);
  t.match(foreign.body, { statusCode: 404, error: 'Not Found', message: `Keyword with id ${k.id} not found`, path: `/api/v1/keywords/${k.id}` });
  const unknown = crypto.randomUUID();
  t.equal((await server.get(`/api/v1/keywords/${unknown}`, { key: alice.key })).status, 404);
  const bad = await server.get('/api/v1/keywords/not-a-uuid', { key: alice.key });
  t.equal(bad.status, 400);
  t.same(bad.body.errors, [{ field: 'id', message: 'must be a UUID' }]);
  t.equal((await server.get(`/api/v1/keywords/${k.id}`)).status, 401, 'no key');
});

t.test('list: page envelope of the organization only, sorted by value by default', async (t) => {
  const fresh = await server.organization();
  const carol = await server.member(fresh);
  const dave = await server.admin(fresh);
  for (const v of ['beta', 'Alpha', 'gamma', 'alpha']) await keyword(carol, v);
  await keyword(outsider, 'not mine');

  const res = await server.get('/api/v1/keywords', { key: dave.key });
  t.equal(res.status, 200);
  t.match(res.body, { totalElements: 4, totalPages: 1, size: 20, number: 0, first: true, last: true, empty: false });
  t.match(res.body.pageable, { pageNumber: 0, pageSize: 20, offset: 0, paged: true, unpaged: false });
  const values = res.body.content.map((k: { value: string }) => k.value);
  // Ascending by value; how 'Alpha' and 'alpha' order between themselves is the database collation's business.
  t.same(values.map((v: string) => v.toLowerCase()), ['alpha', 'alpha', 'beta', 'gamma']);
  for (const item of res.body.content) t.equal(item.organizationId, fresh);

  const page = await server.get('/api/v1/keywords?page=1&size=3&sort=value,desc', { key: carol.key });
  t.match(page.body, { totalElements: 4, totalPages: 2, size: 3, number: 1, first: false, last: true, numberOfElements: 1 });
  t.same(page.body.content.map((k: { value: string }) => k.value), [values[0]], 'the last of the descending order is the first of the ascending one');

  const byDate = await server.get('/api/v1/keywords?sort=createdAt,desc', { key: carol.key });
  t.same(byDate.body.content.map((k: { value: string }) => k.value), ['alpha', 'gamma', 'Alpha', 'beta']);
  const badSort = await server.get('/api/v1/keywords?sort=organizationId,asc', { key: carol.key });
  t.equal(badSort.status, 400);
  t.equal(badSort.body.errors[0].field, 'sort');
  t.equal((await server.get('/api/v1/keywords?size=201', { key: carol.key })).body.size, 200, 'a larger size is capped at 200');

  const empty = await server.get('/api/v1/keywords', { key: (await server.admin(await server.organization())).key });
  t.match(empty.body, { content: [], totalElements: 0, empty: true });
});

t.test('keywords cannot be updated or deleted (no such routes): 404 with the envelope', async (t) => {
  const k = await keyword(alice, 'Permanent');
  for (const method of ['PUT', 'DELETE', 'PATCH']) {
    const res = await server.request(method, `/api/v1/keywords/${k.id}`, { key: admin.key, body: method === 'DELETE' ? undefined : { value: 'Changed' } });
    t.ok(res.status === 404 || res.status === 405, `${method} is refused`);
    t.match(res.body, { statusCode: res.status, path: `/api/v1/keywords/${k.id}` });
  }
  t.equal((await server.get(`/api/v1/keywords/${k.id}`, { key: alice.key })).body.value, 'Permanent');
});

t.test('an inactive organization user cannot read or create keywords', async (t) => {
  const inactive = await server.member(org, { status: 'INACTIVE' });
  t.equal((await server.get('/api/v1/keywords', { key: inactive.key })).status, 401);
  t.equal((await server.post('/api/v1/keywords', { value: 'Nope' }, { key: inactive.key })).status, 401);
});

t.test('tools list_keywords and get_keyword return the REST GET body', async (t) => {
  const k = await keyword(bob, 'Tool keyword');
  const client = await connectMcp(server.url, { key: bob.key, teardown: (fn) => t.teardown(fn) });
  await expectToolMatchesRest(t, server, client, bob.key, 'list_keywords', {}, '/keywords');
  await expectToolMatchesRest(t, server, client, bob.key, 'list_keywords', { page: 1, size: 2 }, '/keywords?page=1&size=2');
  await expectToolMatchesRest(t, server, client, bob.key, 'get_keyword', { id: k.id }, `/keywords/${k.id}`);

  const foreign = await keyword(outsider, 'Foreign tool keyword');
  const hidden = await callTool(client, 'get_keyword', { id: foreign.id });
  t.ok(hidden.isError, 'a keyword of another organization is a not-found tool result');
  t.match(JSON.stringify(hidden.content), /not found/);
  const tools = (await client.listTools()).tools.map((tool) => tool.name);
  t.ok(tools.includes('list_keywords') && tools.includes('get_keyword'));
  t.notOk(tools.some((name) => name.includes('create_keyword')), 'the agent endpoint stays read-only');
});
