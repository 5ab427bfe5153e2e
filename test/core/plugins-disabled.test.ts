import t from 'tap';
import { connectMcp } from '../support/mcp.ts';
import { startTestServer } from '../support/server.ts';

// A deployment that does not list the lab-notebook-color plugin (test/core/plugins.test.ts
// covers it listed). Its own file, so its own process: a kernel with the plugin loaded in the
// same process would share the projects plugin's module-level extension registry.
const plain = await startTestServer(t, { plugins: ['users', 'projects'] });

t.test('without the plugin: no route, no tool, no field', async (t) => {
  const porg = await plain.organization();
  const member = await plain.member(porg);
  const created = await plain.post('/api/v1/projects', { code: 'NB', name: 'N', description: 'd', notebookColor: '#ffaa00' }, { key: member.key });
  // The body schema drops properties it does not know (removeAdditional), so the field is ignored.
  t.equal(created.status, 201);
  t.notOk('notebookColor' in created.body, 'not in the response');
  t.equal((await plain.get(`/api/v1/projects/${created.body.id}/notebook-color`, { key: member.key })).status, 404);
  t.notOk(plain.kernel.reads.some((r) => r.name === 'get_project_notebook_color'), 'no read, so no tool');
  const client = await connectMcp(plain.url, { key: member.key, teardown: (fn) => t.teardown(fn) });
  t.notOk((await client.listTools()).tools.some((x) => x.name === 'get_project_notebook_color'));
  const [table] = await plain.sql("select to_regclass('lab_notebook_color') as t");
  t.same(table, { t: null }, 'its migration did not run');
});
