// Collection writes sent truly at once (parallel HTTPS requests on a real PostgreSQL) with study
// deletes and moves and with each other end in a state one serial order of them gives; no 5xx.
import t, { type Test } from 'tap';
import { createProject, createStudy, startTestServer, testCast, type Response } from '../../support/server.ts';

const server = await startTestServer(t, { plugins: ['users', 'projects', 'studies', 'study-collections'] });
const { alice } = await testCast(server);
const k = { key: alice.key };
const TRIES = 10;

async function collection(visibility = 'PRIVATE'): Promise<{ id: string; version: number }> {
  const res = await server.post('/api/v1/study-collections', { name: 'Race', visibility }, k);
  if (res.status !== 201) throw new Error(`collection create failed: ${res.status} ${res.text}`);
  return res.body;
}
const members = (collectionId: string) => server.sql<{ study_id: string }>('select study_id from study_collection_study where collection_id = ?', [collectionId]);
const events = (collectionId: string, eventType: string) =>
  server.sql<{ project_id: string }>(`select project_id from activity where data->>'collectionId' = ? and event_type = ?`, [collectionId, eventType]);

function statuses(t: Test, responses: Response[], allowed: number[][]) {
  responses.forEach((res, i) => t.ok(allowed[i].includes(res.status), `status ${res.status} is one of ${allowed[i].join(', ')}`, { body: res.text }));
}

t.test('adding a study to a collection while the study is deleted: the study ends in no collection, the delete succeeds', async (t) => {
  const p = await createProject(server, alice);
  for (let i = 0; i < TRIES; i++) {
    const [c, s] = [await collection(), (await createStudy(server, alice, p.id)).id];
    const [del, add] = await Promise.all([server.delete(`/api/v1/studies/${s}`, k), server.post(`/api/v1/study-collections/${c.id}/studies/${s}`, undefined, k)]);
    statuses(t, [del, add], [[204], [200, 404]]);
    t.same(await members(c.id), [], 'no membership of a deleted study');
    // Serial orders: add then delete (one study_added), or delete then add (404, nothing recorded).
    t.equal((await events(c.id, 'study_collection.study_added')).length, add.status === 200 ? 1 : 0, 'recorded only when added');
  }
});

t.test('adding a study while the collection is deleted: the collection goes with its memberships', async (t) => {
  const p = await createProject(server, alice);
  const s = (await createStudy(server, alice, p.id)).id;
  for (let i = 0; i < TRIES; i++) {
    const c = await collection();
    const [del, add] = await Promise.all([server.delete(`/api/v1/study-collections/${c.id}`, k), server.post(`/api/v1/study-collections/${c.id}/studies/${s}`, undefined, k)]);
    statuses(t, [del, add], [[204], [200, 404]]);
    t.same(await members(c.id), [], 'no membership of a deleted collection');
    t.same(await server.sql('select id from study_collection where id = ?', [c.id]), [], 'the collection is gone');
  }
});

t.test('a study added while it moves: the study_added entry follows the study to its new project', async (t) => {
  const [from, to] = [await createProject(server, alice), await createProject(server, alice)];
  for (let i = 0; i < TRIES; i++) {
    const [c, s] = [await collection(), (await createStudy(server, alice, from.id)).id];
    const [move, add] = await Promise.all([
      server.request('PATCH', `/api/v1/studies/${s}/move`, { ...k, body: { projectId: to.id } }),
      server.post(`/api/v1/study-collections/${c.id}/studies/${s}`, undefined, k),
    ]);
    statuses(t, [move, add], [[200], [200]]);
    t.same(await events(c.id, 'study_collection.study_added'), [{ project_id: to.id }], 'recorded on the project the study is in');
  }
});

t.test('concurrent PUTs without a version both apply, one after the other', async (t) => {
  for (let i = 0; i < TRIES; i++) {
    const c = await collection('PUBLIC');
    const path = `/api/v1/study-collections/${c.id}`;
    const [a, b] = await Promise.all([server.put(path, { name: 'Renamed' }, k), server.put(path, { description: 'Described' }, k)]);
    statuses(t, [a, b], [[200], [200]]);
    const [row] = await server.sql<{ name: string; description: string; version: number }>('select name, description, version from study_collection where id = ?', [c.id]);
    t.same(row, { name: 'Renamed', description: 'Described', version: c.version + 2 }, 'both changes, each on the other');
  }
});

t.test('the same study added twice at once: one membership, one study_added entry', async (t) => {
  const p = await createProject(server, alice);
  for (let i = 0; i < TRIES; i++) {
    const [c, s] = [await collection(), (await createStudy(server, alice, p.id)).id];
    const adds = await Promise.all([1, 2, 3].map(() => server.post(`/api/v1/study-collections/${c.id}/studies/${s}`, undefined, k)));
    statuses(t, adds, [[200], [200], [200]]);
    t.same(await members(c.id), [{ study_id: s }]);
    t.equal((await events(c.id, 'study_collection.study_added')).length, 1);
  }
});

t.test('two membership changes under one If-Match: one applies, the other is 412 (the studies are part of the tag)', async (t) => {
  const p = await createProject(server, alice);
  for (let i = 0; i < TRIES; i++) {
    const c = await collection();
    const [s1, s2] = [(await createStudy(server, alice, p.id)).id, (await createStudy(server, alice, p.id)).id];
    for (const s of [s1, s2]) t.equal((await server.post(`/api/v1/study-collections/${c.id}/studies/${s}`, undefined, k)).status, 200);
    const etag = (await server.get(`/api/v1/study-collections/${c.id}`, k)).headers.get('etag')!;
    const answers = await Promise.all([s1, s2].map((s) => server.delete(`/api/v1/study-collections/${c.id}/studies/${s}`, { ...k, headers: { 'if-match': etag } })));
    t.same(answers.map((a) => a.status).sort(), [204, 412], 'never both');
    t.equal((await members(c.id)).length, 1, 'one membership removed');
  }
});
