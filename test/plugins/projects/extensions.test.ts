import t from 'tap';
import { Type } from '@sinclair/typebox';
import { definePlugin, errors } from '../../../core/public.ts';
import { projectExtensions } from '../../../plugins/projects/extensions.ts';
import { startTestServer } from '../../support/server.ts';

// An inline child plugin: keeps rows per project and registers the delete hook, as studies will.
const children = definePlugin({
  name: 'children',
  version: '0.0.0',
  dependsOn: ['projects'],
  migrations: [{ name: 'children-0001', sql: ['create table child (id serial primary key, project_id uuid not null)'] }],
  setup(ctx) {
    const projects = ctx.use(projectExtensions);
    projects.addField({
      name: 'childCount',
      plugin: 'children',
      schema: Type.Integer({ minimum: 0 }),
      async save(op, project, value) {
        // 13 is refused after the project row was written: the whole create must roll back.
        if (value === 13) throw new errors.ValidationError([{ field: 'childCount', message: 'is unlucky' }]);
        for (let i = 0; i < (value as number); i++) await op.em.execute('insert into child (project_id) values (?)', [project.id]);
      },
    });
    projects.beforeDelete(async (op, deleted) => {
      await op.em.execute('delete from child where project_id in (?)', [deleted.map((p) => p.id)]);
    });
  },
});

const server = await startTestServer(t, { plugins: ['users', 'projects'], extraPlugins: [children] });
const org = await server.organization();
const alice = await server.member(org);

t.test('a contributed field is saved in the create transaction', async (t) => {
  const res = await server.post('/api/v1/projects', { code: 'C', name: 'n', description: 'd', childCount: 2 }, { key: alice.key });
  t.equal(res.status, 201);
  t.same(await server.sql('select count(*)::int as n from child where project_id = ?', [res.body.id]), [{ n: 2 }]);
});

t.test('a failing contribution rolls back the project, its membership and its activity', async (t) => {
  const before = await server.sql<{ p: number; a: number; m: number }>(
    'select (select count(*)::int from project) as p, (select count(*)::int from activity) as a, (select count(*)::int from project_member) as m');
  const res = await server.post('/api/v1/projects', { code: 'C', name: 'n', description: 'd', childCount: 13 }, { key: alice.key });
  t.equal(res.status, 400);
  t.same(res.body.errors, [{ field: 'childCount', message: 'is unlucky' }]);
  const after = await server.sql('select (select count(*)::int from project) as p, (select count(*)::int from activity) as a, (select count(*)::int from project_member) as m');
  t.same(after, before);
});

t.test('deleting a project runs the children hook in the same transaction', async (t) => {
  const res = await server.post('/api/v1/projects', { code: 'C', name: 'n', description: 'd', childCount: 3 }, { key: alice.key });
  const del = await server.delete(`/api/v1/projects/${res.body.id}`, { key: alice.key });
  t.equal(del.status, 204, del.text);
  t.same(await server.sql('select count(*)::int as n from child where project_id = ?', [res.body.id]), [{ n: 0 }]);
});

t.test('a field the spec names but no enabled plugin fills is a clear 400', async (t) => {
  for (const field of ['storage', 'elnA', 'elnB', 'defaultGitGroup']) {
    const res = await server.post('/api/v1/projects', { code: 'C', name: 'n', description: 'd', [field]: {} }, { key: alice.key });
    t.equal(res.status, 400, field);
    t.equal(res.body.errors[0].field, field);
    t.match(res.body.errors[0].message, /plugin is not enabled/);
  }
});
