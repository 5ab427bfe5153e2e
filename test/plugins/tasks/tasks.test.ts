import t from 'tap';
import { startTestServer, testCast, type Member } from '../../support/server.ts';
import { callTool, connectMcp, expectToolMatchesRest } from '../../support/mcp.ts';

const server = await startTestServer(t, { plugins: ['users', 'projects', 'studies', 'assay-types', 'assays', 'tasks'] });
const { admin, alice, bob, outsider } = await testCast(server);

async function ok(res: Promise<{ status: number; text: string; body: any }>, status = 201) {
  const r = await res;
  if (r.status !== status) throw new Error(`expected ${status}, got ${r.status}: ${r.text}`);
  return r.body;
}
const project = (owner: Member, visibility: string) => ok(server.post('/api/v1/projects', { code: 'P', name: 'P', description: 'd', visibility }, { key: owner.key }));
const pub = await project(alice, 'PUBLIC');
const prot = await project(alice, 'PROTECTED');
const priv = await project(alice, 'PRIVATE');
const study = await ok(server.post('/api/v1/studies', { projectId: prot.id, name: 'S' }, { key: alice.key }));
const type = await ok(server.post('/api/v1/assay-types', { name: 'ELISA', status: 'ACTIVE', fields: [], tasks: [{ label: 'Coat plate', order: 1 }, { label: 'Read plate', order: 2 }] }, { key: admin.key }));
const assay = await ok(server.post('/api/v1/assays', { studyId: study.id, assayTypeId: type.id, name: 'A' }, { key: alice.key }));

t.test('an assay starts with its type\'s standard tasks, in order', async (t) => {
  const res = await server.get(`/api/v1/assays/${assay.id}/tasks`, { key: alice.key });
  t.equal(res.status, 200);
  t.same(res.body.content.map((x: { label: string; status: string; parentType: string }) => [x.label, x.status, x.parentType]), [
    ['Coat plate', 'TODO', 'ASSAY'],
    ['Read plate', 'TODO', 'ASSAY'],
  ]);
});

t.test('a standard task brings its form: fields with their defaults as data; data is checked; COMPLETE needs the required ones', async (t) => {
  const form = [
    { name: 'approved', displayName: 'Approved', type: 'BOOLEAN', required: true },
    { name: 'reads', displayName: 'Reads', type: 'INTEGER', defaultValue: 2 },
  ];
  const typed = await ok(server.post('/api/v1/assay-types', { name: 'Sign-off', status: 'ACTIVE', tasks: [{ label: 'Review', fields: form }] }, { key: admin.key }));
  const a = await ok(server.post('/api/v1/assays', { studyId: study.id, assayTypeId: typed.id, name: 'With form' }, { key: alice.key }));
  const [task] = (await server.get(`/api/v1/assays/${a.id}/tasks`, { key: alice.key })).body.content;
  t.same(task.fields.map((f: { name: string; required: boolean; defaultValue: unknown }) => [f.name, f.required, f.defaultValue]), [['approved', true, null], ['reads', false, 2]]);
  t.same(task.data, { reads: 2 }, 'the defaults, filled in');
  const url = `/api/v1/assays/${a.id}/tasks/${task.id}`;
  const wrong = await server.put(url, { data: { reads: 'two', colour: 'red' } }, { key: alice.key });
  t.equal(wrong.status, 400);
  t.same(wrong.body.errors.map((e: { field: string }) => e.field).sort(), ['data.colour', 'data.reads']);
  const early = await server.request('PATCH', `${url}/complete`, { key: alice.key });
  t.equal(early.status, 400, 'not completable without the required field');
  t.same(early.body.errors, [{ field: 'data.approved', message: 'is required to complete the task' }]);
  t.equal((await server.put(url, { status: 'COMPLETE' }, { key: alice.key })).status, 400, 'nor through PUT');
  const undone = await server.request('PATCH', `${url}/complete`, { key: alice.key, body: { status: 'INCOMPLETE' } });
  t.equal(undone.status, 200, 'closing it undone needs nothing');
  const done = await server.request('PATCH', `${url}/complete`, { key: alice.key, body: { data: { approved: true } } });
  t.equal(done.status, 200);
  t.match(done.body, { status: 'COMPLETE', data: { approved: true, reads: 2 } });
  const own = await ok(server.post(`/api/v1/projects/${pub.id}/tasks`, { label: 'No form' }, { key: alice.key }));
  t.same([own.fields, own.data], [[], {}], 'a task made here has no form');
  const stray = await server.post(`/api/v1/projects/${pub.id}/tasks`, { label: 'x', data: { any: 1 } }, { key: alice.key });
  t.equal(stray.status, 400);
  t.equal(stray.body.errors[0].field, 'data.any');
});

t.test('create under each parent with every field; validation names the field', async (t) => {
  for (const [segment, id] of [['projects', pub.id], ['studies', study.id], ['assays', assay.id]]) {
    const res = await server.post(`/api/v1/${segment}/${id}/tasks`, { label: 'Weigh', status: 'IN_PROGRESS', dueDate: '2026-12-01', assignedToId: bob.organizationUserId }, { key: alice.key });
    t.equal(res.status, 201, segment);
    t.match(res.body, { label: 'Weigh', status: 'IN_PROGRESS', dueDate: '2026-12-01T00:00:00.000Z', assignedToId: bob.organizationUserId, parentId: id, completedAt: null });
  }
  const blank = await server.post(`/api/v1/projects/${pub.id}/tasks`, { label: ' ' }, { key: alice.key });
  t.same(blank.body.errors, [{ field: 'label', message: 'must not be blank' }]);
  const status = await server.post(`/api/v1/projects/${pub.id}/tasks`, { label: 'x', status: 'DONE' }, { key: alice.key });
  t.equal(status.status, 400);
  t.equal(status.body.errors[0].field, 'status');
  const foreign = await server.post(`/api/v1/projects/${pub.id}/tasks`, { label: 'x', assignedToId: outsider.organizationUserId }, { key: alice.key });
  t.equal(foreign.status, 400);
  t.same(foreign.body.errors, [{ field: 'assignedToId', message: 'is not an organization user of this organization' }]);
  const badDate = await server.post(`/api/v1/projects/${pub.id}/tasks`, { label: 'x', dueDate: 'tomorrow' }, { key: alice.key });
  t.equal(badDate.body.errors[0].field, 'dueDate');
  // Only years 0001 to 9999 (in UTC) read back as ISO 8601 (and PostgreSQL has no year 0).
  for (const dueDate of ['0000-01-01', '9999-12-31T23:59:59-14:00']) {
    const res = await server.post(`/api/v1/projects/${pub.id}/tasks`, { label: 'x', dueDate }, { key: alice.key });
    t.equal(res.status, 400, dueDate);
    t.same(res.body.errors, [{ field: 'dueDate', message: 'is out of range (years 0001 to 9999, in UTC)' }], `${dueDate}: the field named`);
  }
  const edge = await server.post(`/api/v1/projects/${pub.id}/tasks`, { label: 'x', dueDate: '9999-12-31T23:59:59Z' }, { key: alice.key });
  t.equal(edge.body.dueDate, '9999-12-31T23:59:59.000Z', 'the last instant of 9999 is kept');
});

t.test('permission matrix: contributors write, viewers read, others get 404', async (t) => {
  const task = await ok(server.post(`/api/v1/studies/${study.id}/tasks`, { label: 'Mix' }, { key: alice.key }));
  t.equal((await server.get(`/api/v1/studies/${study.id}/tasks/${task.id}`, { key: bob.key })).status, 200, 'PROTECTED viewer reads');
  t.equal((await server.post(`/api/v1/studies/${study.id}/tasks`, { label: 'x' }, { key: bob.key })).status, 403);
  t.equal((await server.put(`/api/v1/studies/${study.id}/tasks/${task.id}`, { label: 'x' }, { key: bob.key })).status, 403);
  t.equal((await server.request('PATCH', `/api/v1/studies/${study.id}/tasks/${task.id}/complete`, { key: bob.key })).status, 403);
  t.equal((await server.delete(`/api/v1/studies/${study.id}/tasks/${task.id}`, { key: bob.key })).status, 403);
  t.equal((await server.get(`/api/v1/studies/${study.id}/tasks`, { key: outsider.key })).status, 404);
  t.equal((await server.put(`/api/v1/studies/${study.id}/tasks/${task.id}`, { label: 'x' }, { key: admin.key })).status, 200, 'admin');
  const hidden = await ok(server.post(`/api/v1/projects/${priv.id}/tasks`, { label: 'secret' }, { key: alice.key }));
  t.equal((await server.get(`/api/v1/projects/${priv.id}/tasks/${hidden.id}`, { key: bob.key })).status, 404);
  t.equal((await server.get(`/api/v1/tasks/${hidden.id}`, { key: bob.key })).status, 404);
  t.equal((await server.get(`/api/v1/studies/${study.id}/tasks/${hidden.id}`, { key: alice.key })).status, 404, 'under the wrong parent');
});

t.test('update merges; complete (optional body) records RESEARCH activity; delete', async (t) => {
  const task = await ok(server.post(`/api/v1/assays/${assay.id}/tasks`, { label: 'Wash' }, { key: alice.key }));
  const upd = await server.put(`/api/v1/assays/${assay.id}/tasks/${task.id}`, { dueDate: '2027-01-05T09:00:00+01:00', order: 7 }, { key: alice.key });
  t.match(upd.body, { label: 'Wash', dueDate: '2027-01-05T08:00:00.000Z', order: 7 });
  const done = await server.request('PATCH', `/api/v1/assays/${assay.id}/tasks/${task.id}/complete`, { key: alice.key });
  t.equal(done.status, 200);
  t.match(done.body, { status: 'COMPLETE', completedById: alice.organizationUserId });
  t.ok(done.body.completedAt);
  const undone = await server.request('PATCH', `/api/v1/assays/${assay.id}/tasks/${task.id}/complete`, { key: alice.key, body: { status: 'INCOMPLETE' } });
  t.equal(undone.body.status, 'INCOMPLETE');
  const [row] = await server.sql<{ category: string; project_id: string; study_id: string; assay_id: string; data: Record<string, unknown> }>(
    `select category, project_id, study_id, assay_id, data from activity where event_type = 'task.completed' and data->>'taskId' = ? order by date limit 1`, [task.id]);
  t.match(row, { category: 'RESEARCH', project_id: prot.id, study_id: study.id, assay_id: assay.id, data: { oldStatus: 'TODO', newStatus: 'COMPLETE' } });
  t.equal((await server.delete(`/api/v1/assays/${assay.id}/tasks/${task.id}`, { key: alice.key })).status, 204);
  t.equal((await server.get(`/api/v1/tasks/${task.id}`, { key: alice.key })).status, 404);
});

t.test('a status changed by PUT is recorded with its old and new status (spec, "Events" 2)', async (t) => {
  const task = await ok(server.post(`/api/v1/assays/${assay.id}/tasks`, { label: 'Spin' }, { key: alice.key }));
  const closed = await server.put(`/api/v1/assays/${assay.id}/tasks/${task.id}`, { status: 'COMPLETE', label: 'Spin down' }, { key: alice.key });
  t.match(closed.body, { status: 'COMPLETE', completedById: alice.organizationUserId });
  await server.put(`/api/v1/assays/${assay.id}/tasks/${task.id}`, { label: 'Spin twice' }, { key: alice.key });
  const rows = await server.sql<{ data: Record<string, unknown> }>(`select data from activity where event_type = 'task.updated' and data->>'taskId' = ? order by date`, [task.id]);
  t.same(rows.map((r) => r.data), [
    { taskId: task.id, fields: ['label', 'status'], oldStatus: 'TODO', newStatus: 'COMPLETE' },
    { taskId: task.id, fields: ['label'] },
  ]);
});

t.test('tools equal REST; not viewable is a not-found result', async (t) => {
  const client = await connectMcp(server.url, { key: bob.key, teardown: (fn) => t.teardown(fn) });
  await expectToolMatchesRest(t, server, client, bob.key, 'list_study_tasks', { studyId: study.id }, `/studies/${study.id}/tasks`);
  await expectToolMatchesRest(t, server, client, bob.key, 'list_assay_tasks', { assayId: assay.id, page: 0, size: 1 }, `/assays/${assay.id}/tasks?page=0&size=1`);
  const one = (await server.get(`/api/v1/assays/${assay.id}/tasks`, { key: bob.key })).body.content[0];
  await expectToolMatchesRest(t, server, client, bob.key, 'get_task', { id: one.id }, `/tasks/${one.id}`);
  const { tools } = await client.listTools();
  t.notOk(tools.some((x) => x.name === 'list_project_tasks'), 'the spec has no list_project_tasks tool');
  const hidden = (await server.get(`/api/v1/projects/${priv.id}/tasks`, { key: alice.key })).body.content[0];
  t.equal((await callTool(client, 'get_task', { id: hidden.id })).isError, true);
});

t.test('deleting the project deletes the tasks of it, its studies and assays', async (t) => {
  await server.delete(`/api/v1/projects/${prot.id}`, { key: alice.key });
  t.same(await server.sql(`select id from task where parent_id in (?, ?, ?)`, [prot.id, study.id, assay.id]), []);
});

// Races: truly concurrent requests end as one serial order of them would, with one activity entry per change.
const TRIES = 8;
const studyIn = async (projectId: string) => ok(server.post('/api/v1/studies', { projectId, name: 'S' }, { key: alice.key }));
const taskEntries = async (taskId: string) =>
  server.sql<{ event_type: string; project_id: string }>(`select event_type, project_id from activity where data->>'taskId' = ? order by event_type`, [taskId]);

t.test('a task created while its study is deleted comes first and goes with it, or is a 404: no task outlives its parent', async (t) => {
  const p = await project(alice, 'PRIVATE');
  for (let i = 0; i < TRIES; i++) {
    const s = await studyIn(p.id);
    const [deleted, created] = await Promise.all([
      server.delete(`/api/v1/studies/${s.id}`, { key: alice.key }),
      server.post(`/api/v1/studies/${s.id}/tasks`, { label: 'Late' }, { key: alice.key }),
    ]);
    t.equal(deleted.status, 204);
    t.ok([201, 404].includes(created.status), `create: 201 or 404, got ${created.status}`);
    t.same(await server.sql('select id from task where parent_id = ?', [s.id]), [], 'no task left');
    const made = (await server.sql(`select 1 from activity where study_id = ? and event_type = 'task.created'`, [s.id])).length;
    t.equal(made, created.status === 201 ? 1 : 0, 'an entry only for a task that was made');
  }
});

t.test('concurrent writes on one task apply one after the other (no 409 without a version); one entry per change', async (t) => {
  const s = await studyIn((await project(alice, 'PROTECTED')).id);
  for (let i = 0; i < 3; i++) {
    const task = await ok(server.post(`/api/v1/studies/${s.id}/tasks`, { label: 'Stir' }, { key: alice.key }));
    const url = `/api/v1/studies/${s.id}/tasks/${task.id}`;
    const complete = () => server.request('PATCH', `${url}/complete`, { key: alice.key });
    const writes = await Promise.all([server.put(url, { label: 'Shake' }, { key: alice.key }), complete(), complete(), complete()]);
    t.same(writes.map((r) => r.status), [200, 200, 200, 200], `every write answers 200 ${writes.filter((r) => r.status !== 200).map((r) => r.text)}`);
    t.match((await server.get(url, { key: alice.key })).body, { label: 'Shake', status: 'COMPLETE', completedById: alice.organizationUserId });
    const deletes = await Promise.all([1, 2, 3].map(() => server.delete(url, { key: alice.key })));
    t.same(deletes.map((r) => r.status).sort(), [204, 404, 404]);
    t.same((await taskEntries(task.id)).map((r) => r.event_type), ['task.completed', 'task.created', 'task.deleted', 'task.updated']);
  }
});

t.test('a task written while its study moves is recorded where the study is: its history goes along', async (t) => {
  for (let i = 0; i < TRIES; i++) {
    const [from, to] = [await project(alice, 'PROTECTED'), await project(alice, 'PROTECTED')];
    const s = await studyIn(from.id);
    const task = await ok(server.post(`/api/v1/studies/${s.id}/tasks`, { label: 'Label' }, { key: alice.key }));
    const [moved, completed] = await Promise.all([
      server.request('PATCH', `/api/v1/studies/${s.id}/move`, { key: alice.key, body: { projectId: to.id } }),
      server.request('PATCH', `/api/v1/studies/${s.id}/tasks/${task.id}/complete`, { key: alice.key }),
    ]);
    t.same([moved.status, completed.status], [200, 200]);
    t.same((await taskEntries(task.id)).map((r) => [r.event_type, r.project_id]), [['task.completed', to.id], ['task.created', to.id]]);
  }
});
