import t from 'tap';
import { startTestServer, testCast, type Member } from '../../support/server.ts';

// Projects alone: provisioning plugins (storage, ELN) would add their own steps and events.
const server = await startTestServer(t, { plugins: ['users', 'projects'] });
const { org, admin, alice, bob, outsider } = await testCast(server, ['Acme', 'Other']);

const body = (extra: Record<string, unknown> = {}) => ({ code: 'P-1', name: 'Project', description: 'About it', ...extra });

async function create(owner: Member, extra: Record<string, unknown> = {}) {
  const res = await server.post('/api/v1/projects', body(extra), { key: owner.key });
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.text}`);
  return res.body;
}

t.test('create returns 201 with the project; the creator is a member', async (t) => {
  const res = await server.post('/api/v1/projects', body({ visibility: 'PRIVATE' }), { key: alice.key });
  t.equal(res.status, 201);
  t.match(res.body, { code: 'P-1', name: 'Project', description: 'About it', visibility: 'PRIVATE', status: 'ACTIVE', archived: false, organizationId: org, createdById: alice.organizationUserId });
  t.match(res.body.id, /^[0-9a-f-]{36}$/);
  const got = await server.get(`/api/v1/projects/${res.body.id}`, { key: alice.key });
  t.equal(got.status, 200);
  t.same(got.body, res.body);
  const [activity] = await server.sql<{ event_type: string; category: string; organization_user_id: string }>(
    'select event_type, category, organization_user_id from activity where project_id = ?', [res.body.id]);
  t.same(activity, { event_type: 'project.created', category: 'RESEARCH', organization_user_id: alice.organizationUserId });
});

t.test('blank code and description are validation errors with one item each', async (t) => {
  const res = await server.post('/api/v1/projects', { code: '  ', name: 'x', description: '' }, { key: alice.key });
  t.equal(res.status, 400);
  t.equal(res.body.statusCode, 400);
  t.equal(res.body.error, 'Bad Request');
  t.equal(res.body.path, '/api/v1/projects');
  t.same(res.body.errors, [
    { field: 'code', message: 'must not be blank' },
    { field: 'description', message: 'must not be blank' },
  ]);
  t.match(res.body.details, /code: must not be blank/);
});

t.test('visibility decides who views and who contributes', async (t) => {
  const pub = await create(alice, { visibility: 'PUBLIC' });
  const prot = await create(alice, { visibility: 'PROTECTED' });
  const priv = await create(alice, { visibility: 'PRIVATE' });
  const view = async (m: Member, id: string) => (await server.get(`/api/v1/projects/${id}`, { key: m.key })).status;
  const edit = async (m: Member, id: string) => (await server.put(`/api/v1/projects/${id}`, { name: 'renamed' }, { key: m.key })).status;

  t.same([await view(bob, pub.id), await view(bob, prot.id), await view(bob, priv.id)], [200, 200, 404]);
  t.same([await edit(bob, pub.id), await edit(bob, prot.id), await edit(bob, priv.id)], [403, 403, 404]);
  t.same([await view(admin, priv.id), await edit(admin, priv.id)], [200, 200]);
  t.same([await view(outsider, pub.id), await edit(outsider, pub.id)], [404, 404]);
  t.same([await view(alice, priv.id), await edit(alice, priv.id)], [200, 200]);

  const forbidden = await server.put(`/api/v1/projects/${prot.id}`, { name: 'x' }, { key: bob.key });
  t.equal(forbidden.text, '', '403 has an empty body');
});

t.test('list filters visibility in SQL: totals match what the caller may see', async (t) => {
  const org2 = await server.organization();
  const owner = await server.member(org2);
  const viewer = await server.member(org2);
  for (const visibility of ['PUBLIC', 'PROTECTED', 'PRIVATE', 'PRIVATE', 'PRIVATE']) await create(owner, { visibility });
  const seen = await server.get('/api/v1/projects?size=1', { key: viewer.key });
  t.equal(seen.status, 200);
  t.equal(seen.body.totalElements, 2);
  t.equal(seen.body.totalPages, 2);
  t.equal(seen.body.content.length, 1);
  const all = await server.get('/api/v1/projects', { key: owner.key });
  t.equal(all.body.totalElements, 5);
});

t.test('PUT merges the given fields, records project.updated (only for a change) and a GOVERNANCE record for visibility', async (t) => {
  const p = await create(alice, { visibility: 'PRIVATE' });
  const res = await server.put(`/api/v1/projects/${p.id}`, { name: 'New name', visibility: 'PROTECTED' }, { key: alice.key });
  t.equal(res.status, 200);
  t.match(res.body, { id: p.id, code: p.code, description: p.description, name: 'New name', visibility: 'PROTECTED', version: p.version + 1 });
  const rows = await server.sql<{ event_type: string; category: string; data: Record<string, unknown> }>(
    'select event_type, category, data from activity where project_id = ? order by date, event_type', [p.id]);
  t.same(rows.map((r) => [r.event_type, r.category]), [
    ['project.created', 'RESEARCH'],
    ['project.updated', 'RESEARCH'],
    ['project.visibility_changed', 'GOVERNANCE'],
  ]);
  t.same(rows[2].data, { oldVisibility: 'PRIVATE', newVisibility: 'PROTECTED' });

  // A PUT that changes nothing answers the record as it is and records nothing (README, Activity).
  const same = await server.put(`/api/v1/projects/${p.id}`, { name: 'New name', visibility: 'PROTECTED' }, { key: alice.key });
  t.equal(same.status, 200);
  t.equal(same.body.version, p.version + 1, 'no new version');
  const after = await server.sql('select 1 from activity where project_id = ?', [p.id]);
  t.equal(after.length, rows.length, 'no new activity record');

  const blank = await server.put(`/api/v1/projects/${p.id}`, { description: ' ' }, { key: alice.key });
  t.equal(blank.status, 400);
  t.same(blank.body.errors, [{ field: 'description', message: 'must not be blank' }]);
  const badEnum = await server.put(`/api/v1/projects/${p.id}`, { visibility: 'SECRET' }, { key: alice.key });
  t.equal(badEnum.status, 400);
  t.equal(badEnum.body.errors[0].field, 'visibility');
});

t.test('status changes only through the status operation, with oldStatus/newStatus', async (t) => {
  const p = await create(alice, { visibility: 'PUBLIC' });
  const viaPut = await server.put(`/api/v1/projects/${p.id}`, { status: 'COMPLETE' }, { key: alice.key });
  t.equal(viaPut.status, 400, 'PUT cannot change the status');
  const nonMember = await server.post(`/api/v1/projects/${p.id}/status`, { status: 'ON_HOLD' }, { key: bob.key });
  t.equal(nonMember.status, 403, 'a PUBLIC project is changed by its members only');
  const res = await server.post(`/api/v1/projects/${p.id}/status`, { status: 'ON_HOLD' }, { key: alice.key });
  t.equal(res.status, 200);
  t.equal(res.body.status, 'ON_HOLD');
  const [row] = await server.sql<{ data: Record<string, unknown>; organization_user_id: string }>(
    `select data, organization_user_id from activity where project_id = ? and event_type = 'project.status_changed'`, [p.id]);
  t.same(row, { data: { oldStatus: 'ACTIVE', newStatus: 'ON_HOLD' }, organization_user_id: alice.organizationUserId });
  const invalid = await server.post(`/api/v1/projects/${p.id}/status`, { status: 'PAUSED' }, { key: alice.key });
  t.equal(invalid.status, 400);
  t.equal(invalid.body.errors[0].field, 'status');
  const systemOnly = await server.post(`/api/v1/projects/${p.id}/status`, { status: 'INITIALIZING' }, { key: alice.key });
  t.equal(systemOnly.status, 400);
  t.match(systemOnly.body.message, /ON_HOLD.*INITIALIZING/);

  // Nor on create: a body may carry only the status the new project gets.
  const body = { code: 'S', name: 'S', description: 'd' };
  for (const status of ['BOGUS', 'COMPLETE']) {
    const refused = await server.post('/api/v1/projects', { ...body, status }, { key: alice.key });
    t.equal(refused.status, 400, `create with status ${status}`);
    t.same(refused.body.errors.map((e: { field: string }) => e.field), ['status']);
  }
  const asGiven = await server.post('/api/v1/projects', { ...body, status: 'ACTIVE' }, { key: alice.key });
  t.equal(asGiven.status, 201, 'the status it gets anyway');
});

t.test('archive is a flag, not a status', async (t) => {
  const p = await create(alice, { visibility: 'PROTECTED' });
  const res = await server.post(`/api/v1/projects/${p.id}/archive?archived=true`, undefined, { key: alice.key });
  t.equal(res.status, 200);
  t.match(res.body, { archived: true, status: 'ACTIVE' });
  const back = await server.post(`/api/v1/projects/${p.id}/archive?archived=false`, undefined, { key: alice.key });
  t.equal(back.body.archived, false);
  t.equal((await server.post(`/api/v1/projects/${p.id}/archive?archived=true`, undefined, { key: bob.key })).status, 403);
  const events = await server.sql<{ data: Record<string, unknown> }>(
    `select data from activity where project_id = ? and event_type = 'project.archived' order by date`, [p.id]);
  t.same(events.map((e) => e.data), [{ archived: true }, { archived: false }]);
});

t.test('archiving an archived project, or unarchiving an unarchived one, changes nothing and records nothing', async (t) => {
  // README "Activity": "no change without its record, no record without its change".
  const p = await create(alice, { visibility: 'PROTECTED' });
  const archive = (archived: boolean) => server.post(`/api/v1/projects/${p.id}/archive?archived=${archived}`, undefined, { key: alice.key });
  const events = async () => (await server.sql<{ data: Record<string, unknown> }>(
    `select data from activity where project_id = ? and event_type = 'project.archived' order by date`, [p.id])).map((e) => e.data);

  const notArchived = await archive(false);
  t.equal(notArchived.status, 200);
  t.match(notArchived.body, { archived: false, version: p.version }, 'unarchiving an unarchived project: no new version');
  t.same(await events(), [], 'and no project.archived record');

  const archived = await archive(true);
  t.match(archived.body, { archived: true, version: p.version + 1 });
  const again = await archive(true);
  t.equal(again.status, 200);
  t.match(again.body, { archived: true, version: p.version + 1 }, 'archiving it again: no new version');
  t.same(await events(), [{ archived: true }], 'one record, for the one change');
});

t.test('a stale version is a 409', async (t) => {
  const p = await create(alice);
  t.equal((await server.put(`/api/v1/projects/${p.id}`, { name: 'one', version: p.version }, { key: alice.key })).status, 200);
  const stale = await server.put(`/api/v1/projects/${p.id}`, { name: 'two', version: p.version }, { key: alice.key });
  t.equal(stale.status, 409);
  t.equal(stale.body.statusCode, 409);
});

t.test('permission matrix for every project write', async (t) => {
  const writes: [string, (id: string) => string, unknown][] = [
    ['PUT', (id) => `/api/v1/projects/${id}`, { name: 'n' }],
    ['POST', (id) => `/api/v1/projects/${id}/status`, { status: 'COMPLETE' }],
    ['POST', (id) => `/api/v1/projects/${id}/archive?archived=true`, undefined],
    ['DELETE', (id) => `/api/v1/projects/${id}`, undefined],
  ];
  const expected: [Member, string, number][] = [
    [outsider, 'PUBLIC', 404],
    [bob, 'PRIVATE', 404],
    [bob, 'PROTECTED', 403],
    [bob, 'PUBLIC', 403],
    [alice, 'PRIVATE', 2],
    [admin, 'PRIVATE', 2],
  ];
  for (const [method, path, payload] of writes) {
    for (const [who, visibility, status] of expected) {
      const p = await create(alice, { visibility });
      const res = await server.request(method, path(p.id), { key: who.key, body: payload });
      t.equal(Math.floor(res.status / 100) === 2 ? 2 : res.status, status, `${method} ${visibility} project as ${who === outsider ? 'other organization' : who === bob ? 'non-member' : who === alice ? 'member' : 'admin'}`);
    }
  }
});

t.test('delete: 204, children removed through the hook, access rows gone, record kept in activity', async (t) => {
  const p = await create(alice);
  const res = await server.delete(`/api/v1/projects/${p.id}`, { key: alice.key });
  t.equal(res.status, 204);
  t.equal(res.text, '');
  t.equal((await server.get(`/api/v1/projects/${p.id}`, { key: alice.key })).status, 404);
  t.same(await server.sql('select 1 from project_member where project_id = ?', [p.id]), []);
  const [row] = await server.sql<{ event_type: string }>(`select event_type from activity where project_id = ? and event_type = 'project.deleted'`, [p.id]);
  t.ok(row, 'project.deleted recorded');
});

t.test('body values are not coerced: a wrong JSON type is a 400 naming the field', async (t) => {
  const res = await server.post('/api/v1/projects', { code: 'C', name: 5, description: 'd', visibility: ['PUBLIC'] }, { key: alice.key });
  t.equal(res.status, 400);
  t.same([...new Set(res.body.errors.map((e: { field: string }) => e.field))].sort(), ['name', 'visibility']);
  const list = await server.get('/api/v1/projects?page=0&size=5', { key: alice.key });
  t.equal(list.status, 200, 'query parameters, which arrive as text, are still coerced');
});
