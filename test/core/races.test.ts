// Issue 11, point 1: deletes, moves, archives and status changes on a project, its studies and
// its assays, sent truly at once (parallel HTTPS requests on a real PostgreSQL), end in a state
// that one serial order of them would give; none answers 5xx or a transient conflict.
import t, { type Test } from 'tap';
import { startTestServer, type Response } from '../support/server.ts';

const server = await startTestServer(t, { plugins: ['users', 'projects', 'studies', 'assay-types', 'assays'] });
const org = await server.organization();
const admin = await server.admin(org);
const alice = await server.member(org);
const k = { key: alice.key };
const TRIES = 10;

async function created(res: Response): Promise<{ id: string; projectId?: string; studyId?: string }> {
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.text}`);
  return res.body;
}
const assayType = await created(await server.post('/api/v1/assay-types', { name: 'Race type', status: 'ACTIVE' }, { key: admin.key }));

const project = async () => (await created(await server.post('/api/v1/projects', { code: 'R', name: 'Race', description: 'd' }, k))).id;
const study = async (projectId: string) => (await created(await server.post('/api/v1/studies', { projectId, name: 'S' }, k))).id;
const assay = async (studyId: string) => (await created(await server.post('/api/v1/assays', { studyId, assayTypeId: assayType.id, name: 'A' }, k))).id;

/** Where the rows are now, read from the database itself. */
async function row(table: 'project' | 'study' | 'assay', id: string) {
  const [r] = await server.sql<Record<string, any>>(`select * from ${table} where id = ?`, [id]);
  return r;
}
async function assaysOf(studyId: string): Promise<string[]> {
  return (await server.sql<{ id: string }>('select id from assay where study_id = ? order by id', [studyId])).map((r) => r.id);
}

/** No request of a race may fail on the server's side or surface a transient conflict. */
function noServerError(t: Test, responses: Response[]) {
  for (const res of responses) {
    t.ok(res.status < 500, `no 5xx (${res.status} ${res.text})`);
    t.not(res.status, 409, `no conflict surfaced (${res.text})`);
  }
}

t.test('DELETE a project while one of its studies moves to another project', async (t) => {
  for (let i = 0; i < TRIES; i++) {
    const [from, to] = [await project(), await project()];
    const s = await study(from);
    const assays = [await assay(s), await assay(s)].sort();
    const [del, move] = await Promise.all([server.delete(`/api/v1/projects/${from}`, k), server.request('PATCH', `/api/v1/studies/${s}/move`, { ...k, body: { projectId: to } })]);
    noServerError(t, [del, move]);
    t.equal(del.status, 204, 'the delete succeeds either way');
    t.notOk(await row('project', from), 'the project is gone');
    if (move.status === 200) {
      // Serial order: move, then delete. The study left before the delete and keeps everything.
      t.equal((await row('study', s))?.project_id, to, 'the moved study is in the target project');
      t.same(await assaysOf(s), assays, 'the moved study keeps all its assays');
    } else {
      // Serial order: delete, then move (which finds no study).
      t.equal(move.status, 404, move.text);
      t.notOk(await row('study', s), 'the study went with its project');
      t.same(await assaysOf(s), [], 'and so did its assays');
    }
  }
});

t.test('moving a study into a project that is being deleted', async (t) => {
  for (let i = 0; i < TRIES; i++) {
    const [from, to] = [await project(), await project()];
    const s = await study(from);
    const assays = [await assay(s), await assay(s)].sort();
    const [del, move] = await Promise.all([server.delete(`/api/v1/projects/${to}`, k), server.request('PATCH', `/api/v1/studies/${s}/move`, { ...k, body: { projectId: to } })]);
    noServerError(t, [del, move]);
    t.equal(del.status, 204);
    if (move.status === 200) {
      // Move, then delete: the study arrived in the target and was deleted with it.
      t.notOk(await row('study', s), 'the study was deleted with the target project');
      t.same(await assaysOf(s), [], 'with its assays');
    } else {
      // Delete, then move: the target does not exist (any more).
      t.equal(move.status, 404, 'the target project is not found');
      t.match(move.body, { statusCode: 404, error: 'Not Found', path: `/api/v1/studies/${s}/move` }, 'with the envelope');
      t.equal((await row('study', s))?.project_id, from, 'the study stays where it was');
      t.same(await assaysOf(s), assays, 'with all its assays');
    }
  }
});

t.test('moving a study while it is archived and its status changes: every write applies', async (t) => {
  for (let i = 0; i < TRIES; i++) {
    const [from, to] = [await project(), await project()];
    const s = await study(from);
    const a = await assay(s);
    const before = (await row('study', s)).version;
    const responses = await Promise.all([
      server.request('PATCH', `/api/v1/studies/${s}/move`, { ...k, body: { projectId: to } }),
      server.post(`/api/v1/studies/${s}/archive?archived=true`, undefined, k),
      server.post(`/api/v1/studies/${s}/status`, { status: 'ON_HOLD' }, k),
    ]);
    noServerError(t, responses);
    t.same(responses.map((r) => r.status), [200, 200, 200], 'all three succeed, one after the other');
    const now = await row('study', s);
    t.match(now, { project_id: to, archived: true, status: 'ON_HOLD' }, 'the end state has all three changes');
    t.equal(now.version, before + 3, 'each write saw the previous one');
    t.same(await assaysOf(s), [a], 'the assay moved along');
  }
});

t.test('DELETE a study while one of its assays moves out and another changes status', async (t) => {
  for (let i = 0; i < TRIES; i++) {
    const p = await project();
    const [s1, s2] = [await study(p), await study(p)];
    const [moving, staying] = [await assay(s1), await assay(s1)];
    const [del, move, status] = await Promise.all([
      server.delete(`/api/v1/studies/${s1}`, k),
      server.request('PATCH', `/api/v1/assays/${moving}/move`, { ...k, body: { studyId: s2 } }),
      server.post(`/api/v1/assays/${staying}/status`, { status: 'COMPLETE' }, k),
    ]);
    noServerError(t, [del, move, status]);
    t.equal(del.status, 204);
    t.notOk(await row('study', s1), 'the study is gone');
    t.notOk(await row('assay', staying), 'with the assay that stayed in it');
    t.ok([200, 404].includes(status.status), `the status change ran before the delete or found nothing (${status.status})`);
    if (move.status === 200) t.same(await assaysOf(s2), [moving], 'an assay moved out first survives in its new study');
    else {
      t.equal(move.status, 404);
      t.notOk(await row('assay', moving), 'an assay deleted first is gone, not moved');
    }
  }
});

t.test('DELETE a project while an assay moves into one of its studies', async (t) => {
  for (let i = 0; i < TRIES; i++) {
    const [p, q] = [await project(), await project()];
    const [target, source] = [await study(p), await study(q)];
    const a = await assay(source);
    const [del, move] = await Promise.all([server.delete(`/api/v1/projects/${p}`, k), server.request('PATCH', `/api/v1/assays/${a}/move`, { ...k, body: { studyId: target } })]);
    noServerError(t, [del, move]);
    t.equal(del.status, 204);
    if (move.status === 200) t.notOk(await row('assay', a), 'moved in first: deleted with the project');
    else {
      t.equal(move.status, 404);
      t.equal((await row('assay', a))?.study_id, source, 'the delete came first: the assay stays in its study');
    }
  }
});

t.test('no assay is left in a study that no longer exists, nor any study without its project', async (t) => {
  t.same(await server.sql('select a.id from assay a left join study s on s.id = a.study_id where s.id is null'), []);
  t.same(await server.sql('select s.id from study s left join project p on p.id = s.project_id where p.id is null'), []);
});
