// Studies and assays carry an optional `code` (how labs name them, e.g. Study Tracker's
// STUDY-0142): settable on create and update, returned wherever the record is, unique among the
// organization's records of its kind ignoring case.
import t from 'tap';
import { createProject, startTestServer, testCast } from '../../support/server.ts';

const server = await startTestServer(t, { plugins: ['users', 'projects', 'studies', 'assay-types', 'assays'] });
const { admin, alice, outsider } = await testCast(server);

async function created(res: { status: number; text: string; body: any }) {
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.text}`);
  return res.body;
}

const project = await createProject(server, alice, 'PUBLIC');
const type = await created(await server.post('/api/v1/assay-types', { name: 'ELISA', status: 'ACTIVE' }, { key: admin.key }));

t.test('a study code: set on create, returned by get and list, changed and removed by PUT', async (t) => {
  const s = await created(await server.post('/api/v1/studies', { projectId: project.id, name: 'S', code: 'STUDY-0142' }, { key: alice.key }));
  t.equal(s.code, 'STUDY-0142');
  t.equal((await server.get(`/api/v1/studies/${s.id}`, { key: alice.key })).body.code, 'STUDY-0142');
  const list = await server.get(`/api/v1/projects/${project.id}/studies`, { key: alice.key });
  t.equal(list.body.content.find((x: any) => x.id === s.id).code, 'STUDY-0142');

  const renamed = await server.put(`/api/v1/studies/${s.id}`, { code: 'STUDY-0143' }, { key: alice.key });
  t.same([renamed.status, renamed.body.code, renamed.body.name], [200, 'STUDY-0143', 'S'], 'PUT merges: the name stays');
  const kept = await server.put(`/api/v1/studies/${s.id}`, { name: 'S2' }, { key: alice.key });
  t.equal(kept.body.code, 'STUDY-0143', 'an omitted code keeps its value');
  const removed = await server.put(`/api/v1/studies/${s.id}`, { code: null }, { key: alice.key });
  t.equal(removed.body.code, null);

  const plain = await created(await server.post('/api/v1/studies', { projectId: project.id, name: 'No code' }, { key: alice.key }));
  t.equal(plain.code, null, 'optional: null when not given');
});

t.test('codes are unique per organization and kind, ignoring case', async (t) => {
  await created(await server.post('/api/v1/studies', { projectId: project.id, name: 'A', code: 'DUP-1' }, { key: alice.key }));
  const again = await server.post('/api/v1/studies', { projectId: project.id, name: 'B', code: 'dup-1' }, { key: alice.key });
  t.equal(again.status, 409, 'the same code in another case is a duplicate');
  t.equal(again.body.statusCode, 409);
  const other = await created(await server.post('/api/v1/studies', { projectId: project.id, name: 'C', code: 'DUP-2' }, { key: alice.key }));
  t.equal((await server.put(`/api/v1/studies/${other.id}`, { code: 'Dup-1' }, { key: alice.key })).status, 409, 'also on update');

  // Another organization has codes of its own; an assay may share a study's code.
  const theirs = await createProject(server, outsider, 'PUBLIC');
  t.equal((await server.post('/api/v1/studies', { projectId: theirs.id, name: 'X', code: 'DUP-1' }, { key: outsider.key })).status, 201);
  const a = await server.post('/api/v1/assays', { studyId: other.id, assayTypeId: type.id, name: 'A', code: 'DUP-1' }, { key: alice.key });
  t.same([a.status, a.body.code], [201, 'DUP-1']);
});

t.test('an assay code: set, returned, unique, blank refused', async (t) => {
  const s = await created(await server.post('/api/v1/studies', { projectId: project.id, name: 'S' }, { key: alice.key }));
  const a = await created(await server.post('/api/v1/assays', { studyId: s.id, assayTypeId: type.id, name: 'A', code: 'ASSAY-7' }, { key: alice.key }));
  t.equal((await server.get(`/api/v1/assays/${a.id}`, { key: alice.key })).body.code, 'ASSAY-7');
  t.equal((await server.get(`/api/v1/studies/${s.id}/assays`, { key: alice.key })).body.content[0].code, 'ASSAY-7');
  const dup = await server.post('/api/v1/assays', { studyId: s.id, assayTypeId: type.id, name: 'B', code: 'assay-7' }, { key: alice.key });
  t.equal(dup.status, 409);
  const blank = await server.post('/api/v1/assays', { studyId: s.id, assayTypeId: type.id, name: 'B', code: '  ' }, { key: alice.key });
  t.equal(blank.status, 400);
  t.equal(blank.body.errors[0].field, 'code');
  const long = await server.put(`/api/v1/assays/${a.id}`, { code: 'x'.repeat(65) }, { key: alice.key });
  t.same([long.status, long.body.errors?.[0]?.field], [400, 'code']);
  const [row] = await server.sql<{ data: any }>(`select data from activity where assay_id = ? and event_type = 'assay.updated'`, [a.id]);
  t.notOk(row, 'a refused update records nothing');
  await server.put(`/api/v1/assays/${a.id}`, { code: 'ASSAY-8' }, { key: alice.key });
  const [updated] = await server.sql<{ data: any }>(`select data from activity where assay_id = ? and event_type = 'assay.updated'`, [a.id]);
  t.same(updated.data.fields, ['code'], 'the update names the changed field');
});
