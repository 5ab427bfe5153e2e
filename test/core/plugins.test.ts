import t from 'tap';
import { join } from 'node:path';
import { PluginLoadError } from '../../core/kernel/loader.ts';
import { orderPlugins } from '../../app/plugins.ts';
import { loadDeploymentPlugins as loadPlugins } from '../../app/plugins.ts';
import pino from 'pino';
import type { FastifyBaseLogger } from 'fastify';
import { defineRead, definePlugin, Type } from '../../core/public.ts';
import { assembleKernel } from '../../core/kernel/kernel.ts';
import { connectMcp, callTool, resultText } from '../support/mcp.ts';
import { startTestServer, testConfig } from '../support/server.ts';
import { projectRoot, runCli } from '../cli/labdata-cli.ts';
import { createTestDatabase } from '../support/db.ts';

// The fixture is loaded by path, exactly as LABDATA_PLUGINS would name a third-party plugin.
const fixture = join(projectRoot, 'test/fixtures/plugins/lab-notebook-color/index.ts');
const relativeFixture = './test/fixtures/plugins/lab-notebook-color/index.ts';

const server = await startTestServer(t, { plugins: ['users', 'projects', fixture] });
const org = await server.organization();
const alice = await server.member(org);
const bob = await server.member(org);
const admin = await server.admin(org);

async function createProject(body: Record<string, unknown>, key = alice.key) {
  const res = await server.post('/api/v1/projects', { code: 'NB', name: 'Notebook', description: 'd', ...body }, { key });
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.text}`);
  return res.body;
}

t.test('loadPlugins loads a third-party plugin by path, after what it depends on', async (t) => {
  const plugins = await loadPlugins([fixture, 'projects', 'users']);
  t.same(plugins.map((p) => p.name), ['users', 'projects', 'lab-notebook-color']);
  // A relative path is resolved against the working directory, as for LABDATA_PLUGINS.
  t.equal((await loadPlugins(['users', 'projects', relativeFixture]))[2], plugins[2], 'same module whichever way it is named');
  t.equal((await loadPlugins(['users', 'projects', 'test/fixtures/plugins/lab-notebook-color']))[2], plugins[2], 'a folder stands for its index file');
  t.equal(server.kernel.plugins.map((p) => p.name).join(','), 'users,projects,lab-notebook-color');
});

t.test('the contributed field round-trips through create, update and get', async (t) => {
  const created = await createProject({ notebookColor: '#FFAA00', visibility: 'PRIVATE' });
  t.equal(created.notebookColor, '#ffaa00', 'create returns the field');
  t.equal((await server.get(`/api/v1/projects/${created.id}`, { key: alice.key })).body.notebookColor, '#ffaa00');

  const updated = await server.put(`/api/v1/projects/${created.id}`, { notebookColor: '#123456' }, { key: alice.key });
  t.equal(updated.status, 200);
  t.equal(updated.body.notebookColor, '#123456');
  const renamed = await server.put(`/api/v1/projects/${created.id}`, { name: 'Renamed' }, { key: alice.key });
  t.equal(renamed.body.notebookColor, '#123456', 'an update without the field keeps it');
  const cleared = await server.put(`/api/v1/projects/${created.id}`, { notebookColor: null }, { key: alice.key });
  t.equal(cleared.body.notebookColor, null, 'null clears it');

  const plainProject = await createProject({});
  t.equal(plainProject.notebookColor, null, 'a project without a colour shows null');
  const list = await server.get('/api/v1/projects', { key: alice.key });
  t.ok(list.body.content.every((p: Record<string, unknown>) => 'notebookColor' in p), 'every listed project carries the field');

  const [row] = await server.sql('select count(*)::int as n from lab_notebook_color where project_id = ?', [plainProject.id]);
  t.same(row, { n: 0 }, 'stored in the plugin\'s own table, only when set');
});

t.test('an invalid value is a 400 on the field and stores nothing', async (t) => {
  const before = await server.sql('select count(*)::int as n from project');
  const res = await server.post('/api/v1/projects', { code: 'X', name: 'X', description: 'd', notebookColor: 'orange' }, { key: alice.key });
  t.equal(res.status, 400);
  t.match(res.body.errors, [{ field: 'notebookColor' }]);
  t.same(await server.sql('select count(*)::int as n from project'), before);
});

t.test('saving the field records the plugin\'s activity event', async (t) => {
  const p = await createProject({ notebookColor: '#000000' });
  await server.put(`/api/v1/projects/${p.id}`, { notebookColor: '#ffffff' }, { key: alice.key });
  await server.put(`/api/v1/projects/${p.id}`, { notebookColor: '#FFFFFF' }, { key: alice.key });
  const rows = await server.sql<{ event_type: string; category: string; data: unknown; organization_user_id: string }>(
    "select event_type, category, data, organization_user_id from activity where project_id = ? and event_type like 'lab_notebook_color.%' order by date",
    [p.id],
  );
  t.same(rows, [
    { event_type: 'lab_notebook_color.changed', category: 'RESEARCH', data: { oldColor: null, newColor: '#000000' }, organization_user_id: alice.organizationUserId },
    { event_type: 'lab_notebook_color.changed', category: 'RESEARCH', data: { oldColor: '#000000', newColor: '#ffffff' }, organization_user_id: alice.organizationUserId },
  ], 'one event per change; saving the same colour again records nothing');
  t.ok(server.kernel.services.activity.eventTypes().some((e) => e.eventType === 'lab_notebook_color.changed' && e.plugin === 'lab-notebook-color'));
});

t.test('the plugin\'s route follows project visibility', async (t) => {
  const priv = await createProject({ notebookColor: '#abcdef', visibility: 'PRIVATE' });
  const res = await server.get(`/api/v1/projects/${priv.id}/notebook-color`, { key: alice.key });
  t.equal(res.status, 200);
  t.same(res.body, { projectId: priv.id, notebookColor: '#abcdef' });
  t.equal((await server.get(`/api/v1/projects/${priv.id}/notebook-color`, { key: admin.key })).status, 200, 'an admin views every project');
  const hidden = await server.get(`/api/v1/projects/${priv.id}/notebook-color`, { key: bob.key });
  t.equal(hidden.status, 404, 'a non-viewer gets 404');
  t.equal(hidden.body.statusCode, 404);
  t.equal((await server.get(`/api/v1/projects/${priv.id}/notebook-color`)).status, 401, 'behind the API key like every route');
  const outsider = await server.admin(await server.organization());
  t.equal((await server.get(`/api/v1/projects/${priv.id}/notebook-color`, { key: outsider.key })).status, 404, 'other organizations get 404');
  const spec = await server.get('/docs/api-docs/public-v1', { key: alice.key });
  t.ok(spec.body.paths['/api/v1/projects/{id}/notebook-color']?.get, 'documented in the OpenAPI document');
  t.ok(spec.body.paths['/api/v1/projects'].post.requestBody.content['application/json'].schema.properties.notebookColor, 'the field is documented on create');
  t.ok(spec.body.paths['/api/v1/projects/{id}'].put.requestBody.content['application/json'].schema.properties.notebookColor, 'and on update');
});

t.test('the plugin\'s read is an MCP tool with the same visibility', async (t) => {
  const priv = await createProject({ notebookColor: '#00ff00', visibility: 'PRIVATE' });
  const client = await connectMcp(server.url, { key: alice.key, teardown: (fn) => t.teardown(fn) });
  const { tools } = await client.listTools();
  const tool = tools.find((x) => x.name === 'get_project_notebook_color');
  t.ok(tool, 'listed');
  t.equal(tool?.annotations?.readOnlyHint, true);
  const ok = await callTool(client, 'get_project_notebook_color', { id: priv.id });
  t.notOk(ok.isError);
  t.same(ok.structuredContent, { projectId: priv.id, notebookColor: '#00ff00' });
  const projectTool = await callTool(client, 'get_project', { id: priv.id });
  t.equal((projectTool.structuredContent as Record<string, unknown>).notebookColor, '#00ff00', 'the contributed field shows in get_project too');

  const bobClient = await connectMcp(server.url, { key: bob.key, teardown: (fn) => t.teardown(fn) });
  const hidden = await callTool(bobClient, 'get_project_notebook_color', { id: priv.id });
  t.equal(hidden.isError, true, 'a non-viewer gets a not-found tool error');
  t.match(resultText(hidden), /not found/);
});

t.test('plugin list errors fail with one line naming the plugins', async (t) => {
  const a = definePlugin({ name: 'a', version: '1.0.0', dependsOn: ['b'] });
  const b = definePlugin({ name: 'b', version: '1.0.0', dependsOn: ['c'] });
  const c = definePlugin({ name: 'c', version: '1.0.0', dependsOn: ['a'] });
  const lonely = definePlugin({ name: 'lonely', version: '1.0.0', dependsOn: ['missing'] });
  t.throws(() => orderPlugins([lonely]), new PluginLoadError('plugin "lonely" needs "missing", which is not enabled'));
  t.throws(() => orderPlugins([a, b, c]), new PluginLoadError('plugin dependency cycle: a -> b -> c -> a'));
  t.throws(() => orderPlugins([a, a]), new PluginLoadError('plugin "a" is listed twice'));
  await t.rejects(loadPlugins(['projects']), new PluginLoadError('plugin "projects" needs "users", which is not enabled'));
  await t.rejects(loadPlugins(['users', 'projects', fixture.replace('lab-notebook-color', 'no-such-plugin')]), { name: 'Error', message: /^plugin ".*no-such-plugin\/index\.ts" could not be loaded: / });
  await t.rejects(loadPlugins(['nope']), { message: /^plugin "nope" could not be loaded/ });
  await t.rejects(loadPlugins(['users', 'test/fixtures/bootstrap']), new PluginLoadError('plugin "test/fixtures/bootstrap" is a folder without index.ts, index.js, index.mjs'));
  await t.rejects(loadPlugins(['users', 'test/fixtures/bootstrap/acme.json']), { message: /^plugin "test\/fixtures\/bootstrap\/acme.json" could not be loaded: / });
  for (const err of [() => orderPlugins([a, b, c]), () => orderPlugins([lonely])]) {
    try {
      err();
    } catch (e) {
      t.ok(e instanceof PluginLoadError);
      t.notMatch((e as Error).message, /\n/, 'one line');
    }
  }
});

t.test('a plugin that throws, runs a phase asynchronously or repeats an operation stops start-up in one line naming it', async (t) => {
  const silent = pino({ level: 'silent' }) as unknown as FastifyBaseLogger;
  const read = (name: string, path: string) =>
    defineRead({ name, description: 'd', path, response: Type.Object({}), run: async () => ({}) });
  const assemble = (...plugins: ReturnType<typeof definePlugin>[]) => () => assembleKernel(testConfig(), plugins, silent);
  const boom = () => {
    throw new Error('boom\nat somewhere');
  };
  t.throws(assemble(definePlugin({ name: 'p', version: '1.0.0', setup: boom })), new PluginLoadError('plugin p failed in setup: boom'));
  t.throws(assemble(definePlugin({ name: 'p', version: '1.0.0', register: boom })), new PluginLoadError('plugin p failed in register: boom'));
  t.throws(assemble(definePlugin({ name: 'p', version: '1.0.0', register: async () => {} })), new PluginLoadError('plugin p: register must be synchronous (it returned a Promise)'));
  t.throws(assemble(definePlugin({ name: 'p', version: '1.0.0', setup: (async () => ({})) as never })), new PluginLoadError('plugin p: setup must be synchronous (it returned a Promise)'));
  const first = definePlugin({ name: 'first', version: '1.0.0', register: (ctx) => ctx.read(read('get_thing', '/things/:id')) });
  t.throws(
    assemble(first, definePlugin({ name: 'second', version: '1.0.0', register: (ctx) => ctx.read(read('get_thing', '/other/:id')) })),
    new PluginLoadError('operation "get_thing" is declared by both plugin first and plugin second'),
  );
  t.throws(
    assemble(definePlugin({ name: 'first', version: '1.0.0', register: (ctx) => [1, 2].forEach(() => ctx.read(read('get_thing', '/things/:id'))) })),
    new PluginLoadError('operation "get_thing" is declared twice by plugin first'),
  );
  t.throws(
    assemble(first, definePlugin({ name: 'second', version: '1.0.0', register: (ctx) => ctx.read(read('get_other', '/things/:thingId')) })),
    new PluginLoadError('route GET /things/:thingId is declared by both plugin first and plugin second'),
  );
  t.throws(
    assemble(first, definePlugin({ name: 'second', version: '1.0.0', events: { 'first.x': 'PROJECT' } as never }), definePlugin({ name: 'third', version: '1.0.0', events: { 'first.x': 'PROJECT' } as never })),
    { constructor: PluginLoadError, message: /^plugin third failed in declaring its events: .*first\.x/ },
  );
});

t.test('labdata serve with a missing dependency exits non-zero with that one line', async (t) => {
  const res = await runCli(['serve'], { LABDATA_PLUGINS: 'projects', LABDATA_DATABASE_URL: await createTestDatabase(t), LABDATA_PORT: '0' });
  t.not(res.code, 0);
  t.equal(res.stdout, '');
  t.same(res.reasons, ['labdata: plugin "projects" needs "users", which is not enabled']);
  const cycle = await runCli(['serve'], { LABDATA_PLUGINS: `users,projects,${relativeFixture},nope`, LABDATA_DATABASE_URL: await createTestDatabase(t), LABDATA_PORT: '0' });
  t.not(cycle.code, 0);
  t.match(cycle.reasons, [/^labdata: plugin "nope" could not be loaded: /]);
});

t.test('activity recorded outside the write transaction throws instead of being lost', async (t) => {
  const { activity } = server.kernel.services;
  const actor = { organizationId: org, organizationUserId: alice.organizationUserId } as never;
  t.throws(() => activity.record(server.orm.em.fork(), actor, { eventType: 'project.created' }), {
    message: 'activity project.created must be recorded with the write transaction\'s EntityManager (db.writeTransaction)',
  });
  const rolledBack = new Error('roll back');
  await t.rejects(
    server.orm.em.fork().transactional(async (em) => {
      activity.record(em, actor, { eventType: 'project.created' });
      throw rolledBack;
    }),
    rolledBack,
    'inside a transaction it records',
  );
});
