import t from 'tap';
import { startTestServer, testCast, type Member } from '../../support/server.ts';

const server = await startTestServer(t, { plugins: ['users', 'projects', 'studies'] });
const { org, admin, alice, bob, outsider } = await testCast(server);

async function project(owner: Member, visibility = 'PRIVATE') {
  const res = await server.post('/api/v1/projects', { code: 'P', name: 'P', description: 'd', visibility }, { key: owner.key });
  return res.body as { id: string };
}
async function study(owner: Member, projectId: string, extra: Record<string, unknown> = {}) {
  const res = await server.post('/api/v1/studies', { projectId, name: 'Study', ...extra }, { key: owner.key });
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.text}`);
  return res.body;
}

t.test('create: projectId required, contributor on the parent project, startDate normalised to UTC', async (t) => {
  const p = await project(alice, 'PROTECTED');
  const res = await server.post('/api/v1/studies', { projectId: p.id, name: 'S1', description: 'x', startDate: '2024-05-01T10:00:00+02:00' }, { key: alice.key });
  t.equal(res.status, 201);
  t.match(res.body, { projectId: p.id, name: 'S1', description: 'x', status: 'ACTIVE', archived: false, startDate: '2024-05-01T08:00:00.000Z', organizationId: org });
  const dateOnly = await study(alice, p.id, { startDate: '2024-06-30' });
  t.equal(dateOnly.startDate, '2024-06-30T00:00:00.000Z');

  const missing = await server.post('/api/v1/studies', { name: 'S' }, { key: alice.key });
  t.equal(missing.status, 400);
  t.same(missing.body.errors, [{ field: 'projectId', message: 'is required' }]);
  const badDate = await server.post('/api/v1/studies', { projectId: p.id, name: 'S', startDate: '2024-02-30' }, { key: alice.key });
  t.equal(badDate.status, 400);
  t.equal(badDate.body.errors[0].field, 'startDate');
  const notADate = await server.post('/api/v1/studies', { projectId: p.id, name: 'S', startDate: 'May 1st' }, { key: alice.key });
  t.same(notADate.body.errors, [{ field: 'startDate', message: 'must be a date (YYYY-MM-DD) or an ISO 8601 date-time with offset (YYYY-MM-DDThh:mm:ssZ)' }], 'said in words, not as a regex');
  for (const startDate of ['2024-01-01T24:00:00Z', '2024-01-01T23:60Z', '2024-01-01T23:59:60+02:00']) {
    const badTime = await server.post('/api/v1/studies', { projectId: p.id, name: 'S', startDate }, { key: alice.key });
    t.same([badTime.status, badTime.body.errors], [400, [{ field: 'startDate', message: 'is not a valid date' }]], `startDate ${startDate}`);
  }
  t.equal((await server.post('/api/v1/studies', { projectId: p.id, name: 'S' }, { key: bob.key })).status, 403, 'viewer of a PROTECTED project');
  const priv = await project(alice);
  const hidden = await server.post('/api/v1/studies', { projectId: priv.id, name: 'S' }, { key: bob.key });
  t.equal(hidden.status, 404);
  t.match(hidden.body.message, new RegExp(`Project.*${priv.id}`));
  t.equal((await server.post('/api/v1/studies', { projectId: p.id, name: 'S' }, { key: outsider.key })).status, 404);
  const eln = await server.post('/api/v1/studies', { projectId: p.id, name: 'S', useElnB: true }, { key: alice.key });
  t.equal(eln.status, 400);
  t.match(eln.body.errors[0], { field: 'useElnB', message: /eln-b plugin is not enabled/ });

  const [row] = await server.sql<{ event_type: string; project_id: string }>(`select event_type, project_id from activity where study_id = ?`, [res.body.id]);
  t.same(row, { event_type: 'study.created', project_id: p.id });
});

t.test('studies follow their project: reads, lists and totals', async (t) => {
  const priv = await project(alice);
  const pub = await project(alice, 'PUBLIC');
  const s1 = await study(alice, priv.id);
  const s2 = await study(alice, pub.id);
  t.equal((await server.get(`/api/v1/studies/${s1.id}`, { key: bob.key })).status, 404);
  t.equal((await server.get(`/api/v1/studies/${s2.id}`, { key: bob.key })).status, 200);
  t.equal((await server.get(`/api/v1/studies/${s1.id}`, { key: admin.key })).status, 200);
  t.equal((await server.get(`/api/v1/studies/${s2.id}`, { key: outsider.key })).status, 404);
  const byProject = await server.get(`/api/v1/projects/${priv.id}/studies`, { key: alice.key });
  t.equal(byProject.status, 200);
  t.same(byProject.body.content.map((s: { id: string }) => s.id), [s1.id]);
  t.equal((await server.get(`/api/v1/projects/${priv.id}/studies`, { key: bob.key })).status, 404);
  const bobs = await server.get('/api/v1/studies?size=200', { key: bob.key });
  const ids = bobs.body.content.map((s: { id: string }) => s.id);
  t.ok(ids.includes(s2.id));
  t.notOk(ids.includes(s1.id));
  t.equal(bobs.body.totalElements, ids.length);
});

t.test('update, status, archive with their activity', async (t) => {
  const p = await project(alice, 'PROTECTED');
  const s = await study(alice, p.id);
  const upd = await server.put(`/api/v1/studies/${s.id}`, { name: 'Renamed', startDate: '2025-01-02' }, { key: alice.key });
  t.equal(upd.status, 200);
  t.match(upd.body, { name: 'Renamed', startDate: '2025-01-02T00:00:00.000Z' });
  t.equal((await server.put(`/api/v1/studies/${s.id}`, { name: 'x' }, { key: bob.key })).status, 403);
  t.equal((await server.put(`/api/v1/studies/${s.id}`, { status: 'COMPLETE' }, { key: alice.key })).status, 400);
  const status = await server.post(`/api/v1/studies/${s.id}/status`, { status: 'COMPLETE' }, { key: alice.key });
  t.equal(status.status, 200);
  t.equal(status.body.status, 'COMPLETE');
  const arch = await server.post(`/api/v1/studies/${s.id}/archive?archived=true`, undefined, { key: alice.key });
  t.match(arch.body, { archived: true, status: 'COMPLETE' });
  const rows = await server.sql<{ event_type: string; data: Record<string, unknown> }>(`select event_type, data from activity where study_id = ? order by date`, [s.id]);
  t.same(rows.map((r) => r.event_type), ['study.created', 'study.updated', 'study.status_changed', 'study.archived']);
  t.same(rows[2].data, { oldStatus: 'ACTIVE', newStatus: 'COMPLETE' });
});

t.test('an id given in capitals is read as its canonical lowercase form (spec, Identifiers)', async (t) => {
  const p = await project(alice, 'PROTECTED');
  const to = await project(alice, 'PROTECTED');
  const created = await server.post('/api/v1/studies', { projectId: p.id.toUpperCase(), name: 'Caps' }, { key: alice.key });
  t.equal(created.status, 201);
  t.equal(created.body.projectId, p.id, 'the create echoes the canonical id');
  const got = await server.get(`/api/v1/studies/${created.body.id.toUpperCase()}`, { key: alice.key });
  t.equal(got.status, 200);
  t.same(got.body, created.body, 'create and get answer alike');
  const put = await server.put(`/api/v1/studies/${created.body.id}`, { projectId: p.id.toUpperCase(), name: 'Caps 2' }, { key: alice.key });
  t.equal(put.status, 200, 'the same parent in capitals is no change of parent');
  const moved = await server.request('PATCH', `/api/v1/studies/${created.body.id}/move`, { key: alice.key, body: { projectId: to.id.toUpperCase() } });
  t.equal(moved.status, 200);
  t.equal(moved.body.projectId, to.id);
  const [row] = await server.sql<{ data: Record<string, unknown> }>(
    `select data from activity where study_id = ? and event_type = 'study.moved' and project_id = ?`, [created.body.id, to.id]);
  t.match(row.data, { toProjectId: to.id }, 'activity data keeps the canonical id');

  // The URN form is not an id: a validation failure, not a database refusal.
  const urn = await server.post('/api/v1/studies', { projectId: `urn:uuid:${p.id}`, name: 'Urn' }, { key: alice.key });
  t.same([urn.status, urn.body.errors], [400, [{ field: 'projectId', message: 'must be a UUID' }]]);
  t.equal((await server.get(`/api/v1/studies/urn:uuid:${created.body.id}`, { key: alice.key })).body.errors?.[0]?.field, 'id');

  // PUT may not change the parent: a validation failure naming the field, like any other.
  const refused = await server.put(`/api/v1/studies/${created.body.id}`, { projectId: p.id }, { key: alice.key });
  t.equal(refused.status, 400);
  t.match(refused.body, { details: /projectId/, errors: [{ field: 'projectId', message: /only through PATCH/ }] });
});

t.test('move needs contribution on both projects and is recorded on both', async (t) => {
  const from = await project(alice, 'PUBLIC');
  const to = await project(alice, 'PROTECTED');
  const s = await study(alice, from.id);
  t.equal((await server.request('PATCH', `/api/v1/studies/${s.id}/move`, { key: bob.key, body: { projectId: to.id } })).status, 403, 'a PUBLIC source is moved from by its members only');
  await server.grant(from.id, bob);
  t.equal((await server.request('PATCH', `/api/v1/studies/${s.id}/move`, { key: bob.key, body: { projectId: to.id } })).status, 403, 'bob contributes to the source only');
  const hidden = await project(alice);
  t.equal((await server.request('PATCH', `/api/v1/studies/${s.id}/move`, { key: bob.key, body: { projectId: hidden.id } })).status, 404);
  const moved = await server.request('PATCH', `/api/v1/studies/${s.id}/move`, { key: alice.key, body: { projectId: to.id } });
  t.equal(moved.status, 200);
  t.equal(moved.body.projectId, to.id);
  const rows = await server.sql<{ project_id: string; data: Record<string, unknown> }>(`select project_id, data from activity where study_id = ? and event_type = 'study.moved' order by project_id`, [s.id]);
  t.same(rows.map((r) => r.project_id).sort(), [from.id, to.id].sort());
  t.same(rows[0].data, { fromProjectId: from.id, toProjectId: to.id });
});

t.test('delete a study; deleting a project deletes its studies', async (t) => {
  const p = await project(alice);
  const s1 = await study(alice, p.id);
  const s2 = await study(alice, p.id);
  t.equal((await server.delete(`/api/v1/studies/${s1.id}`, { key: alice.key })).status, 204);
  t.equal((await server.get(`/api/v1/studies/${s1.id}`, { key: alice.key })).status, 404);
  t.equal((await server.delete(`/api/v1/projects/${p.id}`, { key: alice.key })).status, 204);
  t.same(await server.sql('select id from study where id = ?', [s2.id]), []);
});
