import t from 'tap';
import { db, definePlugin, defineRead, errors, schemas, sql, Type } from '../../../core/public.ts';
import { assayAccessById, assayExtensions } from '../../../plugins/assays/extensions.ts';
import { standardTasks } from '../../../plugins/assay-types/extensions.ts';
import { startTestServer } from '../../support/server.ts';

// An inline child plugin doing what the tasks plugin will: the assay type's standard tasks
// become the new assay's tasks, in the create transaction; they go when the assay goes.
const tasks = definePlugin({
  name: 'assay-tasks',
  version: '0.0.0',
  dependsOn: ['assays'],
  migrations: [{ name: 'assay-tasks-0001', sql: ['create table assay_task (id serial primary key, assay_id uuid not null, label text not null, position int not null)'] }],
  setup(ctx) {
    const assays = ctx.use(assayExtensions);
    assays.onCreate(async (op, assay) => {
      for (const task of await standardTasks(op.em, assay.organizationId, assay.assayTypeId)) {
        await op.em.execute('insert into assay_task (assay_id, label, position) values (?, ?, ?)', [assay.id, task.label, task.order]);
      }
    });
    assays.addField({
      name: 'firstTask',
      plugin: 'assay-tasks',
      schema: Type.String(),
      async save(op, assay, value) {
        // Refused after the assay row was written: the whole create must roll back.
        if (value === 'bad') throw new errors.ValidationError([{ field: 'firstTask', message: 'is bad' }]);
        await op.em.execute('insert into assay_task (assay_id, label, position) values (?, ?, 0)', [assay.id, value]);
      },
    });
    assays.beforeDelete(async (op, deleted) => {
      await op.em.execute('delete from assay_task where assay_id in (?)', [deleted.map((a) => a.id)]);
    });
  },
  register(ctx) {
    ctx.read(
      defineRead({
        name: 'list_assay_task_labels',
        description: 'test only',
        path: '/assays/:id/task-labels',
        tool: false,
        params: schemas.IdParams,
        response: Type.Object({ projectId: Type.String(), labels: Type.Array(Type.String()) }),
        async run(c, { id }) {
          const access = await assayAccessById(c, id);
          const rows = await db.query<{ label: string }>(c.em, sql`select label from assay_task where assay_id = ${id} order by position`);
          return { projectId: access.projectId, labels: rows.map((r) => r.label) };
        },
      }),
    );
  },
});

const server = await startTestServer(t, { plugins: ['users', 'projects', 'studies', 'assay-types', 'assays', 'activity'], extraPlugins: [tasks] });
const org = await server.organization();
const admin = await server.admin(org);
const alice = await server.member(org);
const bob = await server.member(org);

const type = (
  await server.post('/api/v1/assay-types', { name: 'ELISA', status: 'ACTIVE', tasks: [{ label: 'Read', order: 2 }, { label: 'Coat', order: 1 }] }, { key: admin.key })
).body;
const projectId = (await server.post('/api/v1/projects', { code: 'P', name: 'P', description: 'd', visibility: 'PRIVATE' }, { key: alice.key })).body.id;
const studyId = (await server.post('/api/v1/studies', { projectId, name: 'S' }, { key: alice.key })).body.id;
const count = async () => (await server.sql<{ a: number; t: number; act: number }>(
  'select (select count(*)::int from assay) as a, (select count(*)::int from assay_task) as t, (select count(*)::int from activity) as act'))[0];

t.test('the standard tasks become the new assay\'s tasks in its create transaction', async (t) => {
  const res = await server.post('/api/v1/assays', { studyId, assayTypeId: type.id, name: 'A', firstTask: 'Plan' }, { key: alice.key });
  t.equal(res.status, 201, res.text);
  const labels = await server.get(`/api/v1/assays/${res.body.id}/task-labels`, { key: alice.key });
  t.same(labels.body, { projectId, labels: ['Plan', 'Coat', 'Read'] });
  t.equal((await server.get(`/api/v1/assays/${res.body.id}/task-labels`, { key: bob.key })).status, 404, 'assayAccessById: not viewable is a 404');

  const before = await count();
  const bad = await server.post('/api/v1/assays', { studyId, assayTypeId: type.id, name: 'A', firstTask: 'bad' }, { key: alice.key });
  t.equal(bad.status, 400);
  t.same(bad.body.errors, [{ field: 'firstTask', message: 'is bad' }]);
  t.same(await count(), before, 'no assay, no task, no activity');
});

t.test('deleting an assay, or its project, runs the assays.records delete hooks', async (t) => {
  const a1 = (await server.post('/api/v1/assays', { studyId, assayTypeId: type.id, name: 'A1' }, { key: alice.key })).body;
  const a2 = (await server.post('/api/v1/assays', { studyId, assayTypeId: type.id, name: 'A2' }, { key: alice.key })).body;
  t.equal((await server.delete(`/api/v1/assays/${a1.id}`, { key: alice.key })).status, 204);
  t.same(await server.sql('select id from assay_task where assay_id = ?', [a1.id]), []);
  t.equal((await server.delete(`/api/v1/projects/${projectId}`, { key: alice.key })).status, 204);
  t.same(await server.sql('select id from assay_task where assay_id = ?', [a2.id]), []);
  t.same(await server.sql('select id from assay where study_id = ?', [studyId]), []);
});

t.test('assays are a parent kind: their activity feed exists and follows visibility', async (t) => {
  const p = (await server.post('/api/v1/projects', { code: 'Q', name: 'Q', description: 'd', visibility: 'PRIVATE' }, { key: alice.key })).body.id;
  const s = (await server.post('/api/v1/studies', { projectId: p, name: 'S' }, { key: alice.key })).body.id;
  const a = (await server.post('/api/v1/assays', { studyId: s, assayTypeId: type.id, name: 'A' }, { key: alice.key })).body;
  await server.post(`/api/v1/assays/${a.id}/status`, { status: 'COMPLETE' }, { key: alice.key });
  const feed = await server.get(`/api/v1/assays/${a.id}/activity`, { key: alice.key });
  t.equal(feed.status, 200, feed.text);
  t.same(feed.body.content.map((r: { eventType: string }) => r.eventType), ['assay.status_changed', 'assay.created']);
  t.match(feed.body.content[0], { projectId: p, studyId: s, assayId: a.id, data: { oldStatus: 'ACTIVE', newStatus: 'COMPLETE' } });
  t.equal((await server.get(`/api/v1/assays/${a.id}/activity`, { key: bob.key })).status, 404);
});
