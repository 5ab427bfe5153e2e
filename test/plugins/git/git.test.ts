import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import t from 'tap';
import { applyBootstrap } from '../../../app/cli/bootstrap.ts';
import { startTestServer, testCast, type Member } from '../../support/server.ts';
import { startGitlabStub } from '../../support/stubs/gitlab.ts';
import { records } from '../external-links/records.ts';

const git = promisify(execFile);
const PLUGINS = ['users', 'projects', 'studies', 'assay-types', 'assays', 'integrations', 'git'];
const env = { LABDATA_SECRET_KEY: randomBytes(32).toString('base64') };
const server = await startTestServer(t, { plugins: PLUGINS, env });
const stub = await startGitlabStub(t, 'glpat-secret');
const root = await mkdtemp(path.join(tmpdir(), 'labdata-git-api-'));
t.teardown(() => rm(root, { recursive: true, force: true }));
await mkdir(path.join(root, 'lab', 'imaging'), { recursive: true });

const { org, other: otherOrg, admin, alice, bob, outsider } = await testCast(server);
const make = records(server);
const api = (p: string) => '/api/v1' + p;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** Organization integrations, made through the integrations plugin's bootstrap section. */
async function integrations(items: Record<string, unknown>[]): Promise<Record<string, string>> {
  const out = await applyBootstrap(server.orm.em.fork(), { integrations: items }, server.kernel);
  return Object.fromEntries(Object.entries((out as Record<string, Record<string, { id: string }>>).integrations).map(([ref, v]) => [ref, v.id]));
}

stub.addGroup('lab');
stub.addGroup('imaging');
const ids = await integrations([
  { ref: 'gitlab', organization: org, type: 'GIT', name: 'GitLab', settings: { provider: 'HTTP', baseUrl: stub.url, timeoutMs: 500 }, credentials: { token: 'glpat-secret' } },
  { ref: 'local', organization: org, type: 'GIT', name: 'Lab Git', settings: { provider: 'LOCAL', rootPath: root } },
  { ref: 'eln', organization: org, type: 'ELN_A', name: 'Notebook', settings: { baseUrl: 'http://127.0.0.1:9' } },
  { ref: 'broken', organization: org, type: 'GIT', name: 'No provider', settings: {} },
  { ref: 'badtoken', organization: org, type: 'GIT', name: 'Wrong token', settings: { provider: 'HTTP', baseUrl: stub.url }, credentials: { token: 'glpat-wrong' } },
  { ref: 'theirs', organization: otherOrg, type: 'GIT', name: 'Their GitLab', settings: { provider: 'HTTP', baseUrl: stub.url }, credentials: { token: 'glpat-secret' } },
]);
const gitlab = ids.gitlab;
const local = ids.local;

async function createProject(who: Member, extra: Record<string, unknown> = {}, visibility = 'PRIVATE') {
  return server.post(api('/projects'), { code: 'G', name: 'Git project', description: 'with git', visibility, ...extra }, { key: who.key });
}

async function projectCount(code: string) {
  const [row] = await server.sql<{ n: number }>('select count(*)::int as n from project where code = ?', [code]);
  return row.n;
}

async function repositoryActivity(parentId: string) {
  return server.sql<{ event_type: string; category: string; data: Record<string, unknown>; project_id: string; study_id: string | null; assay_id: string | null }>(
    `select event_type, category, data, project_id, study_id, assay_id from activity where event_type = 'git.repository_created' and data->>'parentId' = ?`,
    [parentId],
  );
}

t.test('defaultGitGroup on create: validated against the integration, stored, shown on the project', async (t) => {
  stub.requests.length = 0;
  const res = await createProject(alice, { defaultGitGroup: { integrationId: gitlab, groupId: 'lab' } });
  t.equal(res.status, 201, res.text);
  t.same(res.body.defaultGitGroup, { integrationId: gitlab, groupId: 'lab' });
  t.same(stub.requests.map((r) => `${r.method} ${r.path}`), ['GET /api/v4/groups/lab'], 'the group was checked at the provider');
  t.equal(stub.requests[0].headers['private-token'], 'glpat-secret', "with the integration's token");
  t.equal(stub.calls('POST').length, 0, 'no repository is created for the project');

  const got = await server.get(api(`/projects/${res.body.id}`), { key: alice.key });
  t.same(got.body, res.body);
  const list = await server.get(api('/projects?size=100'), { key: alice.key });
  t.same(list.body.content.find((p: { id: string }) => p.id === res.body.id).defaultGitGroup, { integrationId: gitlab, groupId: 'lab' });

  const plain = await createProject(alice);
  t.equal(plain.status, 201);
  t.equal(plain.body.defaultGitGroup, null, 'null when none');

  const byLocal = await createProject(alice, { defaultGitGroup: { integrationId: local, groupId: 'lab/imaging' } });
  t.equal(byLocal.status, 201, byLocal.text);
  t.same(byLocal.body.defaultGitGroup, { integrationId: local, groupId: 'lab/imaging' });
});

t.test('defaultGitGroup validation: group, integration type, organization, shape; nothing is stored on failure', async (t) => {
  const cases: [string, unknown, number, RegExp | string][] = [
    ['missing group', { integrationId: gitlab, groupId: 'nope' }, 400, 'defaultGitGroup.groupId'],
    ['missing local group', { integrationId: local, groupId: 'nope' }, 400, 'defaultGitGroup.groupId'],
    ['local group outside the root', { integrationId: local, groupId: '../..' }, 400, 'defaultGitGroup.groupId'],
    ['ELN integration', { integrationId: ids.eln, groupId: 'lab' }, 400, 'defaultGitGroup.integrationId'],
    ['unusable settings', { integrationId: ids.broken, groupId: 'lab' }, 400, 'defaultGitGroup.integrationId'],
    ['blank group', { integrationId: gitlab, groupId: ' ' }, 400, 'defaultGitGroup.groupId'],
    ['no group', { integrationId: gitlab }, 400, 'defaultGitGroup.groupId'],
    ['not a uuid', { integrationId: 'x', groupId: 'lab' }, 400, 'defaultGitGroup.integrationId'],
  ];
  for (const [what, value, status, field] of cases) {
    const code = `BAD-${what}`;
    const res = await server.post(api('/projects'), { code, name: 'n', description: 'd', defaultGitGroup: value }, { key: alice.key });
    t.equal(res.status, status, what);
    t.match(res.body, { statusCode: status, path: '/api/v1/projects' }, `${what}: the error envelope`);
    t.ok(res.body.errors?.some((e: { field: string }) => e.field === field), `${what}: names ${field}`);
    t.equal(await projectCount(code), 0, `${what}: no project`);
  }
  for (const [what, integrationId] of [['another organization', ids.theirs], ['unknown', randomUUID()]]) {
    const res = await server.post(api('/projects'), { code: 'BAD-404', name: 'n', description: 'd', defaultGitGroup: { integrationId, groupId: 'lab' } }, { key: alice.key });
    t.equal(res.status, 404, what);
    t.match(res.body, { statusCode: 404, message: new RegExp(integrationId) });
  }
  t.equal(await projectCount('BAD-404'), 0);
});

t.test('defaultGitGroup on update: set, change, clear; a provider that is down does not block the write', async (t) => {
  const p = (await createProject(alice)).body;
  let res = await server.put(api(`/projects/${p.id}`), { defaultGitGroup: { integrationId: gitlab, groupId: 'lab' } }, { key: alice.key });
  t.equal(res.status, 200, res.text);
  t.same(res.body.defaultGitGroup, { integrationId: gitlab, groupId: 'lab' });
  res = await server.put(api(`/projects/${p.id}`), { defaultGitGroup: { integrationId: local, groupId: 'lab' } }, { key: alice.key });
  t.same(res.body.defaultGitGroup, { integrationId: local, groupId: 'lab' });
  const [activity] = await server.sql<{ data: { fields: string[] } }>(
    `select data from activity where event_type = 'project.updated' and project_id = ? order by date desc limit 1`,
    [p.id],
  );
  t.same(activity.data.fields, ['defaultGitGroup']);
  // The stored value sent again (a PUT of a GET body) is no change: nothing recorded.
  const updates = async () => (await server.sql(`select 1 from activity where event_type = 'project.updated' and project_id = ?`, [p.id])).length;
  const before = await updates();
  const again = await server.put(api(`/projects/${p.id}`), { defaultGitGroup: { integrationId: local, groupId: 'lab' } }, { key: alice.key });
  t.equal(again.status, 200);
  t.equal(await updates(), before, 'no project.updated for an unchanged default');

  res = await server.put(api(`/projects/${p.id}`), { name: 'renamed', defaultGitGroup: { integrationId: gitlab, groupId: 'missing' } }, { key: alice.key });
  t.equal(res.status, 400);
  res = await server.put(api(`/projects/${p.id}`), { name: 'renamed', defaultGitGroup: { integrationId: ids.badtoken, groupId: 'lab' } }, { key: alice.key });
  t.equal(res.status, 400, 'credentials the provider refuses');
  t.same(res.body.errors.map((e: { field: string }) => e.field), ['defaultGitGroup.integrationId']);
  t.notMatch(res.text, /glpat/, 'no token in the answer');
  const got = await server.get(api(`/projects/${p.id}`), { key: alice.key });
  t.equal(got.body.name, 'Git project', 'the failed updates changed nothing');
  t.same(got.body.defaultGitGroup, { integrationId: local, groupId: 'lab' });

  // Down or silent: only a pre-selection, stored unchecked (and ignored later if it does not resolve).
  stub.fail(500);
  res = await server.put(api(`/projects/${p.id}`), { defaultGitGroup: { integrationId: gitlab, groupId: 'imaging' } }, { key: alice.key });
  stub.recover();
  t.equal(res.status, 200, res.text);
  t.same(res.body.defaultGitGroup, { integrationId: gitlab, groupId: 'imaging' });
  stub.hang = true;
  res = await server.put(api(`/projects/${p.id}`), { defaultGitGroup: { integrationId: gitlab, groupId: 'lab' } }, { key: alice.key });
  stub.recover();
  t.equal(res.status, 200, res.text);
  t.same(res.body.defaultGitGroup, { integrationId: gitlab, groupId: 'lab' });

  res = await server.put(api(`/projects/${p.id}`), { defaultGitGroup: null }, { key: alice.key });
  t.equal(res.status, 200);
  t.equal(res.body.defaultGitGroup, null, 'null clears it');
  t.same(await server.sql('select * from git_project_default where project_id = ?', [p.id]), []);
});

t.test('a stored default that no longer resolves never blocks project writes', async (t) => {
  stub.addGroup('temporary');
  const p = (await createProject(alice, { defaultGitGroup: { integrationId: gitlab, groupId: 'temporary' } })).body;
  stub.removeGroup('temporary');
  stub.requests.length = 0;
  // A client that PUTs back what it got (stale default included).
  const res = await server.put(api(`/projects/${p.id}`), { ...p, name: 'still fine', version: undefined }, { key: alice.key });
  t.equal(res.status, 200, res.text);
  t.equal(res.body.name, 'still fine');
  t.same(res.body.defaultGitGroup, { integrationId: gitlab, groupId: 'temporary' }, 'kept as stored');
  t.equal(stub.requests.length, 0, 'an unchanged default is not checked again');
  t.equal((await server.post(api(`/projects/${p.id}/status`), { status: 'ON_HOLD' }, { key: alice.key })).status, 200);
  t.equal((await server.get(api(`/projects/${p.id}`), { key: alice.key })).status, 200);
});

t.test('a repository for a study in the default group: 201, named from the study; a repeat returns it with 200', async (t) => {
  const p = (await createProject(alice, { defaultGitGroup: { integrationId: gitlab, groupId: 'lab' } })).body;
  const study = (await server.post(api('/studies'), { projectId: p.id, name: 'Growth Curves: Ä/B #2' }, { key: alice.key })).body;
  stub.requests.length = 0;

  t.equal((await server.get(api(`/studies/${study.id}/git-repository`), { key: alice.key })).status, 404, 'none yet');
  const res = await server.post(api(`/studies/${study.id}/git-repository`), {}, { key: alice.key });
  t.equal(res.status, 201, res.text);
  const name = `growth-curves-a-b-2-${study.id.slice(0, 8)}`;
  t.match(res.body, { id: UUID, parentType: 'STUDY', parentId: study.id, integrationId: gitlab, groupId: 'lab', name, url: `${stub.url}/lab/${name}.git` });
  t.same(Object.keys(res.body).sort(), ['createdAt', 'externalId', 'groupId', 'id', 'integrationId', 'name', 'parentId', 'parentType', 'url']);
  const posts = stub.calls('POST', '/api/v4/projects');
  t.equal(posts.length, 1);
  t.same(posts[0].body, { name, path: name, namespace_id: stub.groups.find((g) => g.path === 'lab')!.id, description: 'Study Growth Curves: Ä/B #2' });
  t.equal(posts[0].headers['private-token'], 'glpat-secret');
  t.equal(res.body.externalId, String(stub.projects.find((x) => x.path === name)!.id));

  const again = await server.post(api(`/studies/${study.id}/git-repository`), { name: 'other-name' }, { key: alice.key });
  t.equal(again.status, 200);
  t.same(again.body, res.body, 'the existing repository');
  t.equal(stub.calls('POST').length, 1, 'nothing created twice');
  const got = await server.get(api(`/studies/${study.id}/git-repository`), { key: alice.key });
  t.equal(got.status, 200);
  t.same(got.body, res.body);

  t.same(await repositoryActivity(study.id), [
    {
      event_type: 'git.repository_created',
      category: 'RESEARCH',
      project_id: p.id,
      study_id: study.id,
      assay_id: null,
      data: { repositoryId: res.body.id, parentType: 'STUDY', parentId: study.id, integrationId: gitlab, groupId: 'lab', name, url: res.body.url },
    },
  ]);
});

t.test('a repository for an assay, in a local group given in the body: a real bare repository', async (t) => {
  const tree = await make.tree(alice, admin);
  const res = await server.post(api(`/assays/${tree.assay.id}/git-repository`), { integrationId: local, groupId: 'lab/imaging', name: 'plate-reader' }, { key: alice.key });
  t.equal(res.status, 201, res.text);
  const dir = path.join(root, 'lab', 'imaging', 'plate-reader.git');
  t.match(res.body, { parentType: 'ASSAY', parentId: tree.assay.id, integrationId: local, groupId: 'lab/imaging', name: 'plate-reader', externalId: 'lab/imaging/plate-reader' });
  t.equal(fileURLToPath(res.body.url), dir);
  const { stdout } = await git('git', ['--git-dir', dir, 'rev-parse', '--is-bare-repository']);
  t.equal(stdout.trim(), 'true', 'git recognises the bare repository');
  t.equal((await server.post(api(`/assays/${tree.assay.id}/git-repository`), undefined, { key: alice.key })).status, 200, 'a repeat (no body) is 200');
  const [activity] = await repositoryActivity(tree.assay.id);
  t.match(activity, { project_id: tree.project.id, study_id: tree.study.id, assay_id: tree.assay.id, data: { parentType: 'ASSAY' } });

  // Default name for an assay.
  const other = await make.assay(alice, tree.study.id, admin);
  const named = await server.post(api(`/assays/${other.id}/git-repository`), { integrationId: local, groupId: 'lab' }, { key: alice.key });
  t.equal(named.status, 201);
  t.equal(named.body.name, `assay-${other.id.slice(0, 8)}`);
});

t.test('without a default that resolves, creation asks for a group (400), and works with one', async (t) => {
  stub.addGroup('short-lived');
  const cases: [string, Record<string, unknown>, () => Promise<void>][] = [
    ['no default', {}, async () => {}],
    ['group removed', { defaultGitGroup: { integrationId: gitlab, groupId: 'short-lived' } }, async () => stub.removeGroup('short-lived')],
  ];
  for (const [what, extra, breakIt] of cases) {
    const p = (await createProject(alice, extra)).body;
    await breakIt();
    const study = (await server.post(api('/studies'), { projectId: p.id, name: 'S' }, { key: alice.key })).body;
    const res = await server.post(api(`/studies/${study.id}/git-repository`), {}, { key: alice.key });
    t.equal(res.status, 400, `${what}: ${res.text}`);
    t.match(res.body, { statusCode: 400, message: /default Git group/ });
    t.same(res.body.errors.map((e: { field: string }) => e.field).sort(), ['groupId', 'integrationId']);
    t.equal((await server.get(api(`/studies/${study.id}/git-repository`), { key: alice.key })).status, 404, `${what}: nothing stored`);
    const ok = await server.post(api(`/studies/${study.id}/git-repository`), { integrationId: gitlab, groupId: 'imaging' }, { key: alice.key });
    t.equal(ok.status, 201, `${what}: an explicit group works`);
  }

  // The default's integration is gone (disconnected): ignored the same way.
  const [gone] = Object.values(await integrations([{ ref: 'gone', organization: org, type: 'GIT', name: 'Gone', settings: { provider: 'LOCAL', rootPath: root } }]));
  const p = (await createProject(alice, { defaultGitGroup: { integrationId: gone, groupId: 'lab' } })).body;
  await server.sql('delete from integration where id = ?', [gone]);
  const study = (await server.post(api('/studies'), { projectId: p.id, name: 'S' }, { key: alice.key })).body;
  const res = await server.post(api(`/studies/${study.id}/git-repository`), {}, { key: alice.key });
  t.equal(res.status, 400, res.text);
  t.match(res.body, { message: /default Git group/ });
  t.equal((await server.put(api(`/projects/${p.id}`), { description: 'still updatable' }, { key: alice.key })).status, 200);
});

t.test("a personal GIT connection: usable by its owner only; once disconnected, a default naming it is ignored", async (t) => {
  const out = await applyBootstrap(
    server.orm.em.fork(),
    {
      personalIntegrations: [
        { ref: 'mine', user: alice.userId, organization: org, type: 'GIT', name: "Alice's Git", settings: { provider: 'HTTP', baseUrl: stub.url }, credentials: { token: 'glpat-secret' } },
      ],
    },
    server.kernel,
  );
  const mine = (out as Record<string, Record<string, { id: string }>>).personalIntegrations.mine.id;
  const p = await createProject(alice, { defaultGitGroup: { integrationId: mine, groupId: 'lab' } }, 'PUBLIC');
  t.equal(p.status, 201, p.text);
  t.equal((await createProject(bob, { defaultGitGroup: { integrationId: mine, groupId: 'lab' } })).status, 404, "another user's connection is not found");

  await server.grant(p.body.id, bob); // a member of alice's project: only members add studies to it
  const forBob = (await server.post(api('/studies'), { projectId: p.body.id, name: 'Bob study' }, { key: bob.key })).body;
  const asked = await server.post(api(`/studies/${forBob.id}/git-repository`), {}, { key: bob.key });
  t.equal(asked.status, 400, "alice's token is never used for bob: the default does not resolve for him");
  t.match(asked.body, { message: /default Git group/ });

  const study = (await server.post(api('/studies'), { projectId: p.body.id, name: 'Alice study' }, { key: alice.key })).body;
  const made = await server.post(api(`/studies/${study.id}/git-repository`), {}, { key: alice.key });
  t.equal(made.status, 201, made.text);
  t.match(made.body, { integrationId: mine, groupId: 'lab' });

  t.equal((await server.delete(api(`/me/integrations/${mine}`), { key: alice.key })).status, 204);
  const later = (await server.post(api('/studies'), { projectId: p.body.id, name: 'Later' }, { key: alice.key })).body;
  const res = await server.post(api(`/studies/${later.id}/git-repository`), {}, { key: alice.key });
  t.equal(res.status, 400, 'the disconnected default is ignored');
  t.equal((await server.put(api(`/projects/${p.body.id}`), { ...p.body, description: 'updated', version: undefined }, { key: alice.key })).status, 200);
});

t.test('explicit group validation on creation', async (t) => {
  const tree = await make.tree(alice, admin);
  const post = (body: unknown) => server.post(api(`/studies/${tree.study.id}/git-repository`), body, { key: alice.key });
  let res = await post({ integrationId: gitlab });
  t.equal(res.status, 400);
  t.same(res.body.errors, [{ field: 'groupId', message: 'is required when integrationId or groupId is given' }]);
  res = await post({ groupId: 'lab' });
  t.same(res.body.errors.map((e: { field: string }) => e.field), ['integrationId']);
  res = await post({ integrationId: gitlab, groupId: 'nope' });
  t.equal(res.status, 400);
  t.same(res.body.errors.map((e: { field: string }) => e.field), ['groupId']);
  res = await post({ integrationId: ids.eln, groupId: 'lab' });
  t.equal(res.status, 400);
  res = await post({ integrationId: ids.theirs, groupId: 'lab' });
  t.equal(res.status, 404);
  res = await post({ integrationId: gitlab, groupId: 'lab', name: '../x' });
  t.equal(res.status, 400);
  t.same(res.body.errors.map((e: { field: string }) => e.field), ['name']);
  t.equal((await server.get(api(`/studies/${tree.study.id}/git-repository`), { key: alice.key })).status, 404, 'nothing stored');
});

t.test('a failing or silent provider: 502/504 with the envelope, nothing stored; a later call succeeds', async (t) => {
  const tree = await make.tree(alice, admin);
  const path_ = api(`/studies/${tree.study.id}/git-repository`);
  const body = { integrationId: gitlab, groupId: 'lab' };
  stub.fail(500);
  let res = await server.post(path_, body, { key: alice.key });
  t.equal(res.status, 502);
  t.match(res.body, { statusCode: 502, error: 'Bad Gateway', message: /Git provider answered HTTP 500/, path: path_ });
  stub.recover();
  stub.down = true;
  res = await server.post(path_, body, { key: alice.key });
  t.equal(res.status, 502);
  t.match(res.body, { message: /could not be reached/ });
  stub.recover();
  stub.hang = true;
  res = await server.post(path_, body, { key: alice.key });
  t.equal(res.status, 504);
  t.match(res.body, { statusCode: 504, error: 'Gateway Timeout' });
  stub.recover();
  t.equal((await server.get(path_, { key: alice.key })).status, 404);
  t.same(await repositoryActivity(tree.study.id), [], 'no activity for failures');

  res = await server.post(path_, body, { key: alice.key });
  t.equal(res.status, 201);
  t.equal(stub.projects.filter((p) => p.path === res.body.name).length, 1);
});

t.test('a repository made at the provider but not stored (crash) is adopted, not duplicated', async (t) => {
  const tree = await make.tree(alice, admin);
  const name = `study-${tree.study.id.slice(0, 8)}`;
  const lab = stub.groups.find((g) => g.path === 'lab')!;
  stub.projects.push({ id: 4242, name, path: name, namespaceId: lab.id, description: null });
  const before = stub.calls('POST').length;
  const res = await server.post(api(`/studies/${tree.study.id}/git-repository`), { integrationId: gitlab, groupId: 'lab' }, { key: alice.key });
  t.equal(res.status, 201);
  t.equal(res.body.externalId, '4242');
  t.equal(stub.calls('POST').length, before, 'no second repository');
});

t.test('concurrent requests store one repository', async (t) => {
  const tree = await make.tree(alice, admin);
  const results = await Promise.all(
    [1, 2, 3].map(() => server.post(api(`/studies/${tree.study.id}/git-repository`), { integrationId: local, groupId: 'lab' }, { key: alice.key })),
  );
  t.same(results.map((r) => r.status).sort(), [200, 200, 201]);
  t.equal(new Set(results.map((r) => r.body.id)).size, 1);
  t.equal((await repositoryActivity(tree.study.id)).length, 1);
});

// A creation racing the record's delete or its study's move ends as one serial order would: no
// row left for a deleted record, the activity entry filed where the record is now. A few rounds.
t.test('a repository requested while its study is deleted: stored and deleted with it, or 404; never left behind', async (t) => {
  const project = await make.project(alice);
  for (let i = 0; i < 4; i++) {
    const study = await make.study(alice, project.id);
    const [created, deleted] = await Promise.all([
      server.post(api(`/studies/${study.id}/git-repository`), { integrationId: local, groupId: 'lab' }, { key: alice.key }),
      server.delete(api(`/studies/${study.id}`), { key: alice.key }),
    ]);
    t.equal(deleted.status, 204);
    t.ok([201, 404].includes(created.status), `201 or 404 (${created.status} ${created.text})`);
    t.same(await server.sql('select id from git_repository where parent_id = ?', [study.id]), [], 'no row of a deleted study');
    t.equal((await repositoryActivity(study.id)).length, created.status === 201 ? 1 : 0, 'an entry only for a stored repository');
  }
});

t.test("a repository requested for an assay while its study moves: the entry follows the assay to its new project", async (t) => {
  const away = await make.project(alice);
  for (let i = 0; i < 4; i++) {
    const tree = await make.tree(alice, admin);
    const [created, moved] = await Promise.all([
      server.post(api(`/assays/${tree.assay.id}/git-repository`), { integrationId: local, groupId: 'lab' }, { key: alice.key }),
      server.request('PATCH', api(`/studies/${tree.study.id}/move`), { key: alice.key, body: { projectId: away.id } }),
    ]);
    t.equal(created.status, 201, created.text);
    t.equal(moved.status, 200, moved.text);
    t.match(await repositoryActivity(tree.assay.id), [{ project_id: away.id, study_id: tree.study.id }], 'filed in the project the assay is in');
  }
});

t.test('permission matrix: other organization, non-member, member, admin', async (t) => {
  const secret = await make.tree(alice, admin, 'PRIVATE');
  const shared = await make.tree(alice, admin, 'PROTECTED');
  const body = { integrationId: local, groupId: 'lab' };
  for (const kind of ['studies', 'assays'] as const) {
    const one = (tree: typeof secret) => api(`/${kind}/${kind === 'studies' ? tree.study.id : tree.assay.id}/git-repository`);
    // Another organization: 404 whatever the record.
    for (const tree of [secret, shared]) {
      t.equal((await server.post(one(tree), body, { key: outsider.key })).status, 404, `${kind}: other organization POST`);
      t.equal((await server.get(one(tree), { key: outsider.key })).status, 404, `${kind}: other organization GET`);
    }
    // bob is not a member: PRIVATE is invisible (404), PROTECTED is visible but read-only (403).
    const hidden = await server.post(one(secret), body, { key: bob.key });
    t.equal(hidden.status, 404);
    t.match(hidden.body.message, kind === 'studies' ? /Study/ : /Assay/);
    const forbidden = await server.post(one(shared), body, { key: bob.key });
    t.equal(forbidden.status, 403);
    t.equal(forbidden.text, '', '403 has an empty body');
    t.equal((await server.get(one(shared), { key: bob.key })).status, 404, 'none yet');
    // alice is a member: creates; bob then sees it on the PROTECTED one.
    t.equal((await server.post(one(shared), body, { key: alice.key })).status, 201);
    t.equal((await server.get(one(shared), { key: bob.key })).status, 200, 'a viewer reads it');
    t.equal((await server.get(one(secret), { key: bob.key })).status, 404);
    // admin: full access.
    t.equal((await server.post(one(secret), body, { key: admin.key })).status, 201);
    t.equal((await server.get(one(secret), { key: admin.key })).status, 200);
  }
  const unknown = await server.get(api(`/studies/${randomUUID()}/git-repository`), { key: alice.key });
  t.equal(unknown.status, 404);
  t.equal((await server.get(api('/studies/not-a-uuid/git-repository'), { key: alice.key })).status, 400);
});

t.test('deleting a study, assay or project removes the stored rows (the repositories stay)', async (t) => {
  const tree = await make.tree(alice, admin);
  await server.put(api(`/projects/${tree.project.id}`), { defaultGitGroup: { integrationId: local, groupId: 'lab' } }, { key: alice.key });
  for (const id of [`/studies/${tree.study.id}`, `/assays/${tree.assay.id}`]) {
    t.equal((await server.post(api(`${id}/git-repository`), {}, { key: alice.key })).status, 201);
  }
  const other = await make.study(alice, tree.project.id);
  t.equal((await server.post(api(`/studies/${other.id}/git-repository`), {}, { key: alice.key })).status, 201);
  t.equal((await server.delete(api(`/studies/${other.id}`), { key: alice.key })).status, 204);
  let rows = await server.sql('select parent_id from git_repository where parent_id in (?, ?, ?)', [tree.study.id, tree.assay.id, other.id]);
  t.equal(rows.length, 2);
  t.equal((await server.delete(api(`/projects/${tree.project.id}`), { key: alice.key })).status, 204);
  rows = await server.sql('select parent_id from git_repository where parent_id in (?, ?)', [tree.study.id, tree.assay.id]);
  t.equal(rows.length, 0);
  t.same(await server.sql('select * from git_project_default where project_id = ?', [tree.project.id]), []);
});

t.test('the extension endpoints are in the OpenAPI document, REST only', async (t) => {
  const doc = (await server.get('/docs/api-docs/public-v1', { key: alice.key })).body;
  for (const kind of ['studies', 'assays']) {
    const item = doc.paths[`/api/v1/${kind}/{id}/git-repository`];
    t.ok(item?.get && item?.post, kind);
    t.same(Object.keys(item.post.responses).filter((s) => s.startsWith('2')).sort(), ['200', '201']);
    t.ok(item.post.responses['403'] && item.post.responses['409'], 'contributors only; one repository per record');
    t.match(item.post.description, /Extension of the v1 API/);
    t.ok(item.post.requestBody, 'the body is documented');
  }
  const project = doc.components?.schemas ? JSON.stringify(doc) : JSON.stringify(doc.paths['/api/v1/projects']);
  t.match(project, /defaultGitGroup/);
  t.notOk(server.kernel.reads.some((r) => r.name.includes('git') && r.tool !== false), 'no MCP tool');
});

t.test('with the git plugin disabled, defaultGitGroup is a clear 400 and the routes are gone', async (t) => {
  const plain = await startTestServer(t, { plugins: ['users', 'projects', 'studies'], env });
  const o = await plain.organization();
  const m = await plain.member(o);
  const res = await plain.post(api('/projects'), { code: 'X', name: 'n', description: 'd', defaultGitGroup: { integrationId: gitlab, groupId: 'lab' } }, { key: m.key });
  t.equal(res.status, 400);
  t.same(res.body.errors, [{ field: 'defaultGitGroup', message: 'is not supported in this deployment: the git plugin is not enabled' }]);
  const project = (await plain.post(api('/projects'), { code: 'X', name: 'n', description: 'd' }, { key: m.key })).body;
  t.notOk('defaultGitGroup' in project);
  const study = (await plain.post(api('/studies'), { projectId: project.id, name: 'S' }, { key: m.key })).body;
  t.equal((await plain.post(api(`/studies/${study.id}/git-repository`), {}, { key: m.key })).status, 404);
});
