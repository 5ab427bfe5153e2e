// A write under If-Match acts on the rows as they are once it holds its locks, like any other
// write (core/db/transaction.ts, `recordLocked`): children created while a delete waited are
// deleted with their parent, activity written while a move waited moves along, and counters
// touched while a visibility change waited are moved too. Truly concurrent requests.
import t from 'tap';
import { startTestServer, testCast, type Response } from '../support/server.ts';

const server = await startTestServer(t, { plugins: ['users', 'projects', 'studies', 'tasks', 'external-links', 'activity'] });
const { admin, alice, bob } = await testCast(server);
const k = { key: alice.key };
const TRIES = 6;

async function created(res: Response): Promise<{ id: string }> {
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.text}`);
  return res.body;
}
const project = async (visibility = 'PRIVATE') =>
  (await created(await server.post('/api/v1/projects', { code: 'IM', name: 'If-Match', description: 'd', visibility }, k))).id;
const etagOf = async (path: string) => (await server.get(path, k)).headers.get('etag')!;

t.test('DELETE of a project under If-Match while tasks, links and studies are created in it: nothing is left behind', async (t) => {
  for (let i = 0; i < TRIES; i++) {
    const id = await project();
    const etag = await etagOf(`/api/v1/projects/${id}`);
    const creates = [
      ...Array.from({ length: 4 }, (_, n) => server.post(`/api/v1/projects/${id}/tasks`, { label: `t${n}` }, k)),
      ...Array.from({ length: 3 }, (_, n) => server.post(`/api/v1/projects/${id}/external-links`, { label: `l${n}`, url: 'https://example.org/x' }, k)),
      ...Array.from({ length: 3 }, () => server.post('/api/v1/studies', { projectId: id, name: 'S' }, k)),
    ];
    const [deleted, ...answers] = await Promise.all([server.delete(`/api/v1/projects/${id}`, { ...k, headers: { 'if-match': etag } }), ...creates]);
    t.equal(deleted.status, 204, `the delete applies (${deleted.text})`);
    for (const res of answers) t.ok(res.status === 201 || res.status === 404, `a create before it (201) or after it (404): ${res.status}`);
    const left = await server.sql<{ n: number }>(
      `select (select count(*) from task where parent_id = ?) + (select count(*) from external_link where parent_id = ?)
            + (select count(*) from study where project_id = ?) as n`, [id, id, id]);
    t.equal(Number(left[0].n), 0, 'no task, link or study outlives the project');
  }
});

t.test('a study moved under If-Match while tasks are created in it takes all its activity along', async (t) => {
  const target = await project();
  for (let i = 0; i < TRIES; i++) {
    const source = await project('PUBLIC');
    const study = (await created(await server.post('/api/v1/studies', { projectId: source, name: 'Mover' }, k))).id;
    const etag = await etagOf(`/api/v1/studies/${study}`);
    const [moved] = await Promise.all([
      server.request('PATCH', `/api/v1/studies/${study}/move`, { ...k, body: { projectId: target }, headers: { 'if-match': etag } }),
      ...Array.from({ length: 6 }, (_, n) => server.post(`/api/v1/studies/${study}/tasks`, { label: `t${n}` }, k)),
    ]);
    t.equal(moved.status, 200, moved.text);
    const behind = await server.sql<{ event_type: string }>(
      `select event_type from activity where study_id = ? and project_id <> ? and event_type <> 'study.moved'`, [study, target]);
    t.same(behind, [], 'no entry of the study stays under the old project');
    const seen = (await server.get(`/api/v1/projects/${source}/activity?size=100`, { key: bob.key })).body.content;
    t.same(seen.filter((r: { studyId: string | null }) => r.studyId === study && !['study.moved', 'study.created'].includes((r as any).eventType)).length, 0,
      'a viewer of the old project sees none of its later history');
  }
});

t.test('PUBLIC to PRIVATE under If-Match while studies are created: page totals stay exact', async (t) => {
  for (let i = 0; i < TRIES; i++) {
    const id = await project('PUBLIC');
    const etag = await etagOf(`/api/v1/projects/${id}`);
    const [changed] = await Promise.all([
      server.put(`/api/v1/projects/${id}`, { visibility: 'PRIVATE' }, { ...k, headers: { 'if-match': etag } }),
      ...Array.from({ length: 6 }, () => server.post('/api/v1/studies', { projectId: id, name: 'S' }, k)),
    ]);
    t.equal(changed.status, 200, changed.text);
  }
  for (const who of [bob, alice, admin]) {
    for (const path of ['/api/v1/studies', '/api/v1/activity']) {
      const rows: unknown[] = [];
      let total = -1;
      for (let page = 0; ; page++) {
        const res = await server.get(`${path}?size=200&page=${page}`, { key: who.key });
        total = res.body.totalElements;
        rows.push(...res.body.content);
        if (res.body.last) break;
      }
      t.equal(total, rows.length, `${path}: the total equals the entries shown`);
    }
  }
});
