import t from 'tap';
import { startTestServer, testCast, type Member } from '../../support/server.ts';
import { callTool, connectMcp, expectToolMatchesRest } from '../../support/mcp.ts';

const server = await startTestServer(t, { plugins: ['users', 'collaborators'] });
const { org, admin, alice, bob, outsider } = await testCast(server);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const full = {
  label: 'Partner lab',
  organizationName: 'Institute of Things',
  organizationLocation: 'Basel, CH',
  contactPersonName: 'Dr. Jane Doe',
  contactEmail: 'jane.doe@things.example',
  code: 'IOT-1',
  active: false,
};

async function collaborator(owner: Member, body: Record<string, unknown> = { label: 'Lab' }) {
  const res = await server.post('/api/v1/collaborators', body, { key: owner.key });
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.text}`);
  return res.body as Record<string, any> & { id: string; version: number };
}

async function activity(id: string) {
  return server.sql<{ event_type: string; category: string; data: Record<string, unknown>; project_id: string | null; organization_user_id: string }>(
    `select event_type, category, data, project_id, organization_user_id from activity
      where event_type like 'collaborator.%' and data->>'label' = (select label from collaborator where id = ?) order by date`,
    [id],
  );
}

t.test('create with every field: 201 with the collaborator and a collaborator.created activity', async (t) => {
  const res = await server.post('/api/v1/collaborators', full, { key: alice.key });
  t.equal(res.status, 201);
  t.same(Object.keys(res.body).sort(), [
    'active', 'code', 'contactEmail', 'contactPersonName', 'createdAt', 'createdById', 'id', 'label',
    'organizationId', 'organizationLocation', 'organizationName', 'updatedAt', 'version',
  ]);
  t.match(res.body, { ...full, id: UUID, organizationId: org, createdById: alice.organizationUserId, version: 1 });
  t.equal(res.body.createdAt, res.body.updatedAt);
  t.same(await server.get(`/api/v1/collaborators/${res.body.id}`, { key: alice.key }).then((r) => r.body), res.body, 'GET returns what POST did');
  t.same(await activity(res.body.id), [
    { event_type: 'collaborator.created', category: 'ADMINISTRATIVE', data: { label: 'Partner lab' }, project_id: null, organization_user_id: alice.organizationUserId },
  ]);
});

t.test('create: only label is required; the rest default to null and active to true', async (t) => {
  const res = await server.post('/api/v1/collaborators', { label: 'Minimal' }, { key: bob.key });
  t.equal(res.status, 201);
  t.match(res.body, {
    label: 'Minimal',
    organizationName: null,
    organizationLocation: null,
    contactPersonName: null,
    contactEmail: null,
    code: null,
    active: true,
  });
  const nulls = await server.post('/api/v1/collaborators', { label: 'Nulls', organizationName: null, contactEmail: null, code: null }, { key: bob.key });
  t.equal(nulls.status, 201);
  t.match(nulls.body, { organizationName: null, contactEmail: null, code: null });
});

t.test('create: validation of every field', async (t) => {
  const cases: [Record<string, unknown>, string, string | RegExp][] = [
    [{}, 'label', 'is required'],
    [{ label: '' }, 'label', 'must not be blank'],
    [{ label: '  ' }, 'label', 'must not be blank'],
    [{ label: 'x'.repeat(256) }, 'label', /255/],
    [{ label: 7 }, 'label', /string/],
    [{ label: 'L', contactEmail: 'not an address' }, 'contactEmail', 'must be an e-mail address'],
    [{ label: 'L', contactEmail: 'jane@' }, 'contactEmail', 'must be an e-mail address'],
    [{ label: 'L', contactEmail: '' }, 'contactEmail', 'must be an e-mail address'],
    [{ label: 'L', organizationName: 5 }, 'organizationName', /string|null/],
    [{ label: 'L', organizationLocation: 'x'.repeat(256) }, 'organizationLocation', /./],
    [{ label: 'L', contactPersonName: ['x'] }, 'contactPersonName', /./],
    [{ label: 'L', code: 'x'.repeat(65) }, 'code', /./],
    [{ label: 'L', active: 'yes' }, 'active', /boolean/],
    [{ label: 'L', active: null }, 'active', /boolean/],
  ];
  for (const [body, field, message] of cases) {
    const res = await server.post('/api/v1/collaborators', body, { key: alice.key });
    t.equal(res.status, 400, JSON.stringify(body));
    t.match(res.body, { statusCode: 400, error: 'Bad Request', message: 'Validation failed', path: '/api/v1/collaborators' });
    t.ok(res.body.errors.some((e: { field: string }) => e.field === field), `${JSON.stringify(body)} names ${field}`);
    t.match(res.body.errors.find((e: { field: string }) => e.field === field).message, message);
  }
  const many = await server.post('/api/v1/collaborators', { label: ' ', contactEmail: 'nope' }, { key: alice.key });
  t.same(many.body.errors, [
    { field: 'label', message: 'must not be blank' },
    { field: 'contactEmail', message: 'must be an e-mail address' },
  ]);
  t.equal(many.body.details, 'label: must not be blank; contactEmail: must be an e-mail address');
  t.same(await server.sql(`select id from collaborator where label = 'L'`), [], 'nothing refused was stored');
});

t.test('update merges: omitted fields keep their value, null clears, version bumps, activity lists changed fields', async (t) => {
  const c = await collaborator(alice, full);
  const res = await server.put(`/api/v1/collaborators/${c.id}`, { label: 'Renamed', code: null, active: true }, { key: bob.key });
  t.equal(res.status, 200);
  t.same(res.body, { ...c, label: 'Renamed', code: null, active: true, version: 2, updatedAt: res.body.updatedAt });
  t.ok(res.body.updatedAt >= c.updatedAt);
  t.same((await server.get(`/api/v1/collaborators/${c.id}`, { key: alice.key })).body, res.body);

  const email = await server.put(`/api/v1/collaborators/${c.id}`, { contactEmail: 'new@things.example', version: 2 }, { key: admin.key });
  t.equal(email.status, 200);
  t.match(email.body, { contactEmail: 'new@things.example', label: 'Renamed', organizationName: full.organizationName, version: 3 });

  const same = await server.put(`/api/v1/collaborators/${c.id}`, { label: 'Renamed' }, { key: bob.key });
  t.equal(same.status, 200);
  t.equal(same.body.version, 3, 'no change, no new version');

  const echo = await server.put(`/api/v1/collaborators/${c.id}`, { ...email.body, organizationLocation: 'Zurich' }, { key: bob.key });
  t.equal(echo.status, 200, 'the GET body with a change can be sent back (read-only fields are ignored)');
  t.match(echo.body, { organizationLocation: 'Zurich', id: c.id, organizationId: org, createdAt: c.createdAt, version: 4 });

  const rows = await server.sql<{ event_type: string; data: Record<string, unknown> }>(
    `select event_type, data from activity where event_type like 'collaborator.%' and organization_id = ? and data->>'label' in ('Partner lab', 'Renamed') order by date`,
    [org],
  );
  const mine = rows.slice(-4);
  t.same(mine.map((r) => r.event_type), ['collaborator.created', 'collaborator.updated', 'collaborator.updated', 'collaborator.updated']);
  t.same(mine[1].data, { label: 'Renamed', fields: ['label', 'code', 'active'] });
  t.same(mine[2].data, { label: 'Renamed', fields: ['contactEmail'] });
  t.same(mine[3].data, { label: 'Renamed', fields: ['organizationLocation'] });
});

t.test('update: a stale version is a 409; validation follows the create rules', async (t) => {
  const c = await collaborator(alice, { label: 'Versioned' });
  t.equal((await server.put(`/api/v1/collaborators/${c.id}`, { code: 'A', version: 1 }, { key: alice.key })).status, 200);
  const stale = await server.put(`/api/v1/collaborators/${c.id}`, { code: 'B', version: 1 }, { key: bob.key });
  t.equal(stale.status, 409);
  t.match(stale.body, { statusCode: 409, error: 'Conflict', message: /collaborator was changed by another request/, path: `/api/v1/collaborators/${c.id}` });
  t.equal((await server.get(`/api/v1/collaborators/${c.id}`, { key: alice.key })).body.code, 'A', 'the stale update changed nothing');

  const cases: [Record<string, unknown>, string, string | RegExp][] = [
    [{ label: '' }, 'label', 'must not be blank'],
    [{ label: null }, 'label', /./],
    [{ contactEmail: 'nope' }, 'contactEmail', 'must be an e-mail address'],
    [{ active: null }, 'active', /boolean/],
    [{ version: 'one' }, 'version', /integer/],
  ];
  for (const [body, field, message] of cases) {
    const res = await server.put(`/api/v1/collaborators/${c.id}`, body, { key: alice.key });
    t.equal(res.status, 400, JSON.stringify(body));
    t.match(res.body.errors.find((e: { field: string }) => e.field === field)?.message, message, `${JSON.stringify(body)} names ${field}`);
  }
  const cleared = await server.put(`/api/v1/collaborators/${c.id}`, { contactEmail: null }, { key: alice.key });
  t.equal(cleared.status, 200);
  t.equal(cleared.body.contactEmail, null);
});

t.test('concurrent updates with the same version: one wins, the other is a 409', async (t) => {
  const c = await collaborator(alice, { label: 'Raced' });
  const results = await Promise.all([
    server.put(`/api/v1/collaborators/${c.id}`, { code: 'X', version: 1 }, { key: alice.key }),
    server.put(`/api/v1/collaborators/${c.id}`, { code: 'Y', version: 1 }, { key: bob.key }),
  ]);
  t.same(results.map((r) => r.status).sort(), [200, 409]);
  const winner = results.find((r) => r.status === 200)!;
  const now = await server.get(`/api/v1/collaborators/${c.id}`, { key: alice.key });
  t.equal(now.body.code, winner.body.code);
  t.equal(now.body.version, 2);
});

t.test('delete: 204, then gone; activity collaborator.deleted', async (t) => {
  const c = await collaborator(alice, { label: 'To be deleted' });
  const res = await server.delete(`/api/v1/collaborators/${c.id}`, { key: bob.key });
  t.equal(res.status, 204);
  t.equal(res.text, '');
  t.equal((await server.get(`/api/v1/collaborators/${c.id}`, { key: alice.key })).status, 404);
  const again = await server.delete(`/api/v1/collaborators/${c.id}`, { key: bob.key });
  t.equal(again.status, 404);
  t.match(again.body, { statusCode: 404, message: `Collaborator with id ${c.id} not found` });
  const rows = await server.sql<{ event_type: string; data: unknown; organization_user_id: string; category: string }>(
    `select event_type, data, organization_user_id, category from activity where event_type = 'collaborator.deleted' and data->>'label' = 'To be deleted'`,
  );
  t.same(rows, [{ event_type: 'collaborator.deleted', data: { label: 'To be deleted' }, organization_user_id: bob.organizationUserId, category: 'ADMINISTRATIVE' }]);
});

t.test('permission matrix: any user of the organization reads and writes; another organization gets 404 everywhere', async (t) => {
  for (const m of [alice, admin]) {
    const c = await collaborator(m, { label: `By ${m === admin ? 'admin' : 'member'}` });
    t.equal((await server.get(`/api/v1/collaborators/${c.id}`, { key: bob.key })).status, 200);
    t.equal((await server.put(`/api/v1/collaborators/${c.id}`, { active: false }, { key: m === admin ? alice.key : admin.key })).status, 200);

    const path = `/api/v1/collaborators/${c.id}`;
    const get = await server.get(path, { key: outsider.key });
    t.equal(get.status, 404);
    t.match(get.body, { statusCode: 404, message: `Collaborator with id ${c.id} not found`, path });
    t.equal((await server.put(path, { label: 'Hijacked' }, { key: outsider.key })).status, 404);
    t.equal((await server.delete(path, { key: outsider.key })).status, 404);
    const list = await server.get('/api/v1/collaborators?size=200', { key: outsider.key });
    t.notOk(list.body.content.some((x: { id: string }) => x.id === c.id), 'not in the other organization\'s list');
    t.equal((await server.get(path, { key: alice.key })).body.label, c.label, 'the other organization changed nothing');
    t.equal((await server.delete(path, { key: m.key })).status, 204);
  }
  const inactive = await server.member(org, { status: 'INACTIVE' });
  t.equal((await server.get('/api/v1/collaborators', { key: inactive.key })).status, 401);
  t.equal((await server.post('/api/v1/collaborators', { label: 'x' }, { key: inactive.key })).status, 401);
  t.equal((await server.get(`/api/v1/collaborators/${crypto.randomUUID()}`, { key: alice.key })).status, 404);
  t.equal((await server.put(`/api/v1/collaborators/${crypto.randomUUID()}`, { label: 'x' }, { key: alice.key })).status, 404);
  t.equal((await server.get('/api/v1/collaborators/nope', { key: alice.key })).status, 400);
});

t.test('list: page envelope of the organization, sorted by label by default; sort whitelist', async (t) => {
  const fresh = await server.organization();
  const carol = await server.member(fresh);
  await collaborator(carol, { label: 'b lab', organizationName: 'Zeta' });
  await collaborator(carol, { label: 'c lab', organizationName: 'Alpha' });
  await collaborator(carol, { label: 'a lab', organizationName: 'Mu' });
  await collaborator(outsider, { label: 'elsewhere' });

  const res = await server.get('/api/v1/collaborators', { key: carol.key });
  t.equal(res.status, 200);
  t.match(res.body, { totalElements: 3, totalPages: 1, size: 20, number: 0, first: true, last: true, empty: false, numberOfElements: 3 });
  t.same(res.body.content.map((c: { label: string }) => c.label), ['a lab', 'b lab', 'c lab']);
  const byName = await server.get('/api/v1/collaborators?sort=organizationName,asc', { key: carol.key });
  t.same(byName.body.content.map((c: { organizationName: string }) => c.organizationName), ['Alpha', 'Mu', 'Zeta']);
  const byDate = await server.get('/api/v1/collaborators?sort=createdAt,desc', { key: carol.key });
  t.same(byDate.body.content.map((c: { label: string }) => c.label), ['a lab', 'c lab', 'b lab']);
  const paged = await server.get('/api/v1/collaborators?page=1&size=2&sort=label,desc', { key: carol.key });
  t.match(paged.body, { totalElements: 3, totalPages: 2, number: 1, size: 2, first: false, last: true });
  t.same(paged.body.content.map((c: { label: string }) => c.label), ['a lab']);
  for (const sort of ['contactEmail,asc', 'label,sideways']) {
    const bad = await server.get(`/api/v1/collaborators?sort=${sort}`, { key: carol.key });
    t.equal(bad.status, 400, sort);
    t.equal(bad.body.errors[0].field, 'sort');
  }
});

t.test('tools list_collaborators and get_collaborator return the REST GET body', async (t) => {
  const c = await collaborator(alice, full);
  await collaborator(bob, { label: 'Second' });
  const client = await connectMcp(server.url, { key: bob.key, teardown: (fn) => t.teardown(fn) });
  await expectToolMatchesRest(t, server, client, bob.key, 'list_collaborators', {}, '/collaborators');
  await expectToolMatchesRest(t, server, client, bob.key, 'list_collaborators', { page: 1, size: 1 }, '/collaborators?page=1&size=1');
  await expectToolMatchesRest(t, server, client, bob.key, 'get_collaborator', { id: c.id }, `/collaborators/${c.id}`);

  const foreign = await collaborator(outsider, { label: 'Foreign' });
  const hidden = await callTool(client, 'get_collaborator', { id: foreign.id });
  t.ok(hidden.isError, 'a collaborator of another organization is a not-found tool result');
  t.match(JSON.stringify(hidden.content), /not found/);
  const tools = (await client.listTools()).tools.map((tool) => tool.name).filter((name) => name.includes('collaborator'));
  t.same(tools.sort(), ['get_collaborator', 'list_collaborators'], 'read-only tools only');
});

t.test('concurrent writes to one collaborator: each applies once, in some order', async (t) => {
  for (let round = 0; round < 3; round++) {
    // Four DELETEs: one 204, the others 404, and one collaborator.deleted record.
    const doomed = await collaborator(alice, { label: `Doomed ${round}` });
    const deletes = await Promise.all([1, 2, 3, 4].map(() => server.request('DELETE', `/api/v1/collaborators/${doomed.id}`, { key: alice.key })));
    t.same(deletes.map((r) => r.status).sort(), [204, 404, 404, 404], `round ${round}: DELETE statuses`);
    const deleted = await server.sql(`select 1 from activity where event_type = 'collaborator.deleted' and data->>'label' = ?`, [`Doomed ${round}`]);
    t.equal(deleted.length, 1, 'the deletion is recorded once');
    // PUTs without a version racing a DELETE: a PUT either lands before it (200) or finds nothing (404).
    const c = await collaborator(alice, { label: `Raced ${round}` });
    const [put1, del, put2] = await Promise.all([
      server.put(`/api/v1/collaborators/${c.id}`, { code: 'A' }, { key: alice.key }),
      server.request('DELETE', `/api/v1/collaborators/${c.id}`, { key: alice.key }),
      server.put(`/api/v1/collaborators/${c.id}`, { code: 'B' }, { key: alice.key }),
    ]);
    t.equal(del.status, 204);
    for (const put of [put1, put2]) t.ok([200, 404].includes(put.status), `PUT ${put.status}`);
    const updates = await server.sql(`select 1 from activity where event_type = 'collaborator.updated' and data->>'label' = ?`, [`Raced ${round}`]);
    t.equal(updates.length, [put1, put2].filter((p) => p.status === 200).length, 'one update record per 200');
  }
});
