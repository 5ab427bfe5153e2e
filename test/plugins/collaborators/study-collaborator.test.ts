// Studies gain `collaboratorId` when the collaborators plugin is enabled (a study's collaborator,
// as Study Tracker has it): set on create and update, cleared with null, returned everywhere.
import t from 'tap';
import { createProject, startTestServer, testCast } from '../../support/server.ts';

const server = await startTestServer(t, { plugins: ['users', 'projects', 'studies', 'collaborators'] });
const { alice, bob, outsider } = await testCast(server);

async function collaborator(key: string, label: string) {
  const res = await server.post('/api/v1/collaborators', { label }, { key });
  if (res.status !== 201) throw new Error(`collaborator create failed: ${res.status} ${res.text}`);
  return res.body.id as string;
}

t.test('a study carries its collaborator: create, read, update, clear', async (t) => {
  const cro = await collaborator(alice.key, 'Charles River');
  const other = await collaborator(alice.key, 'WuXi');
  const p = await createProject(server, alice, 'PUBLIC');
  const created = await server.post('/api/v1/studies', { projectId: p.id, name: 'Tox', collaboratorId: cro }, { key: alice.key });
  t.equal(created.status, 201);
  t.equal(created.body.collaboratorId, cro);
  t.equal((await server.get(`/api/v1/studies/${created.body.id}`, { key: bob.key })).body.collaboratorId, cro);
  const plain = await server.post('/api/v1/studies', { projectId: p.id, name: 'No CRO' }, { key: alice.key });
  t.equal(plain.body.collaboratorId, null, 'none: null');
  const listed = (await server.get(`/api/v1/studies?size=200`, { key: bob.key })).body.content;
  t.same(Object.fromEntries(listed.map((s: { name: string; collaboratorId: string | null }) => [s.name, s.collaboratorId])), { Tox: cro, 'No CRO': null });

  const moved = await server.put(`/api/v1/studies/${created.body.id}`, { collaboratorId: other }, { key: alice.key });
  t.equal(moved.status, 200);
  t.equal(moved.body.collaboratorId, other);
  const updated = await server.sql<{ data: { fields: string[] } }>(
    `select data from activity where event_type = 'study.updated' and study_id = ? order by date desc limit 1`, [created.body.id]);
  t.same(updated[0].data.fields, ['collaboratorId'], 'the change shows in study.updated');
  const cleared = await server.put(`/api/v1/studies/${created.body.id}`, { collaboratorId: null }, { key: alice.key });
  t.equal(cleared.body.collaboratorId, null);
});

t.test('the collaborator must be one of the organization: 400 naming collaboratorId', async (t) => {
  const foreign = await collaborator(outsider.key, 'Elsewhere');
  const p = await createProject(server, alice, 'PUBLIC');
  for (const collaboratorId of [foreign, '00000000-0000-4000-8000-000000000000']) {
    const res = await server.post('/api/v1/studies', { projectId: p.id, name: 'S', collaboratorId }, { key: alice.key });
    t.equal(res.status, 400);
    t.match(res.body.errors, [{ field: 'collaboratorId' }]);
  }
  const bad = await server.post('/api/v1/studies', { projectId: p.id, name: 'S', collaboratorId: 'nope' }, { key: alice.key });
  t.equal(bad.status, 400);
  t.equal(bad.body.errors[0].field, 'collaboratorId');
});

t.test('deleting the collaborator clears it from its studies; deleting the study drops the link', async (t) => {
  const cro = await collaborator(alice.key, 'Gone soon');
  const p = await createProject(server, alice, 'PUBLIC');
  const s = (await server.post('/api/v1/studies', { projectId: p.id, name: 'S', collaboratorId: cro }, { key: alice.key })).body;
  t.equal((await server.delete(`/api/v1/collaborators/${cro}`, { key: alice.key })).status, 204);
  t.equal((await server.get(`/api/v1/studies/${s.id}`, { key: alice.key })).body.collaboratorId, null);
  const keep = await collaborator(alice.key, 'Stays');
  const s2 = (await server.post('/api/v1/studies', { projectId: p.id, name: 'S2', collaboratorId: keep }, { key: alice.key })).body;
  t.equal((await server.delete(`/api/v1/studies/${s2.id}`, { key: alice.key })).status, 204);
  t.same(await server.sql('select * from study_collaborator where study_id = ?', [s2.id]), []);
  t.equal((await server.get(`/api/v1/collaborators/${keep}`, { key: alice.key })).status, 200, 'the collaborator stays');
});
