import t from 'tap';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startTestServer, testCast, type Member } from '../../support/server.ts';
import { callTool, connectMcp, expectToolMatchesRest, resultText } from '../../support/mcp.ts';
import { bases, records } from '../external-links/records.ts';
import { drives, PLUGINS } from './support.ts';

// Spec, "Storage folders": attachments of projects, studies and assays to existing folders on
// the organization's drives; list, get, attach, set primary, detach.
const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'labdata-folders-'));
t.teardown(() => fs.rm(tmp, { recursive: true, force: true }));
const dataDir = path.join(tmp, 'data');
const nas = path.join(tmp, 'nas');
await fs.mkdir(dataDir);
for (const dir of ['raw', 'analysis', 'images/2024', 'shared']) await fs.mkdir(path.join(nas, dir), { recursive: true });

const server = await startTestServer(t, { plugins: PLUGINS, env: { LABDATA_DATA_DIR: dataDir }, jobs: true });
const { org, other, admin, alice, bob, outsider } = await testCast(server);
const make = records(server);
const ids = await drives(server, [
  { ref: 'nas', organization: org, name: 'Lab NAS', kind: 'LOCAL', rootPath: nas },
  { ref: 'down', organization: org, name: 'Offline NAS', kind: 'LOCAL', rootPath: path.join(tmp, 'offline') },
  { ref: 'foreign', organization: other, name: 'Their NAS', kind: 'LOCAL', rootPath: nas },
]);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const api = (p: string) => '/api/v1' + p;

// alice's PROTECTED tree (bob views, cannot contribute) and PRIVATE tree (bob cannot view).
const shared = await make.tree(alice, admin, 'PROTECTED');
const secret = await make.tree(alice, admin, 'PRIVATE');

async function attach(who: Member, base: string, folderPath: string, driveId = ids.nas) {
  const res = await server.post(api(`${base}/storage-folders`), { driveId, path: folderPath }, { key: who.key });
  if (res.status !== 201) throw new Error(`attach failed: ${res.status} ${res.text}`);
  return res.body as Record<string, any> & { id: string };
}

const list = async (who: Member, base: string) => (await server.get(api(`${base}/storage-folders`), { key: who.key })).body.content as Record<string, any>[];
const primaries = async (kind: string, id: string) =>
  Number((await server.sql<{ n: string }>('select count(*) as n from storage_folder where parent_kind = ? and parent_id = ? and is_primary', [kind, id]))[0].n);
const activity = (folderId: string) =>
  server.sql<{ event_type: string; category: string; data: Record<string, unknown>; project_id: string; study_id: string | null; assay_id: string | null }>(
    `select event_type, category, data, project_id, study_id, assay_id from activity where data->>'folderId' = ? order by date`,
    [folderId],
  );

t.test('attach under a project, a study and an assay: 201 with folder metadata only, GET returns it, activity', async (t) => {
  const tree = await make.tree(alice, admin, 'PROTECTED');
  for (const { kind, id, base } of bases(tree)) {
    const res = await server.post(api(`${base}/storage-folders`), { driveId: ids.nas, path: '/images/2024/' }, { key: alice.key });
    t.equal(res.status, 201, `${kind}: ${res.text}`);
    t.same(Object.keys(res.body).sort(), ['createdAt', 'createdById', 'driveId', 'id', 'name', 'organizationId', 'parentId', 'parentType', 'path', 'primary', 'updatedAt']);
    t.match(res.body, {
      id: UUID,
      organizationId: org,
      parentType: kind.toUpperCase(),
      parentId: id,
      driveId: ids.nas,
      path: 'images/2024',
      name: '2024',
      // A project already has its primary folder from creation; a study's or assay's first folder becomes primary.
      primary: kind !== 'project',
      createdById: alice.organizationUserId,
    });
    const got = await server.get(api(`${base}/storage-folders/${res.body.id}`), { key: alice.key });
    t.equal(got.status, 200);
    t.same(got.body, res.body);
    t.match(await activity(res.body.id), [
      {
        event_type: 'storage_folder.attached',
        category: 'RESEARCH',
        data: { folderId: res.body.id, driveId: ids.nas, path: 'images/2024', primary: kind !== 'project' },
        project_id: tree.project.id,
        study_id: kind === 'project' ? null : tree.study.id,
        assay_id: kind === 'assay' ? tree.assay.id : null,
      },
    ]);
    t.equal(await primaries(kind, id), 1, 'exactly one primary');
  }
  const root = await server.post(api(`/studies/${tree.study.id}/storage-folders`), { driveId: ids.nas, path: '/' }, { key: alice.key });
  t.match(root.body, { path: '', name: 'nas', primary: false }, 'the drive root may be attached');
});

t.test('attach: the folder must already exist (400 with the envelope); drive of the organization only (404)', async (t) => {
  const base = api(`/studies/${shared.study.id}/storage-folders`);
  const before = await list(alice, `/studies/${shared.study.id}`);
  const cases: [string, unknown, number, Record<string, unknown>][] = [
    ['missing folder', { driveId: ids.nas, path: 'raw/nope' }, 400, { errors: [{ field: 'path', message: 'folder "raw/nope" does not exist on storage drive "Lab NAS"' }] }],
    ['a path with ".."', { driveId: ids.nas, path: 'raw/..' }, 400, { errors: [{ field: 'path', message: /".."/ }] }],
    ['drive that is down', { driveId: ids.down, path: 'raw' }, 400, { errors: [{ field: 'driveId', message: /storage drive "Offline NAS" is not reachable/ }] }],
    ['path required', { driveId: ids.nas }, 400, { errors: [{ field: 'path', message: 'is required' }] }],
    ['path not a string', { driveId: ids.nas, path: 5 }, 400, { errors: [{ field: 'path' }] }],
    ['driveId required', { path: 'raw' }, 400, { errors: [{ field: 'driveId', message: 'is required' }] }],
    ['driveId not a UUID', { driveId: 'nas', path: 'raw' }, 400, { errors: [{ field: 'driveId', message: 'must be a UUID' }] }],
    ['unknown drive', { driveId: ids.foreign.replace(/^./, '0'), path: 'raw' }, 404, { message: /^Storage drive with id .* not found$/ }],
    ["another organization's drive", { driveId: ids.foreign, path: 'raw' }, 404, { message: `Storage drive with id ${ids.foreign} not found` }],
  ];
  for (const [what, body, status, expected] of cases) {
    const res = await server.post(base, body, { key: alice.key });
    t.equal(res.status, status, `${what}: ${res.text}`);
    t.match(res.body, { statusCode: status, path: base, ...expected }, what);
  }
  await fs.writeFile(path.join(nas, 'raw', 'data.csv'), 'x');
  const file = await server.post(base, { driveId: ids.nas, path: 'raw/data.csv' }, { key: alice.key });
  t.equal(file.status, 400, 'a file is not a folder');
  await fs.symlink(tmp, path.join(nas, 'outside'));
  const escape = await server.post(base, { driveId: ids.nas, path: 'outside/data' }, { key: alice.key });
  t.equal(escape.status, 400);
  t.match(escape.body.errors, [{ field: 'path', message: /must stay inside the drive/ }]);
  t.same(await list(alice, `/studies/${shared.study.id}`), before, 'nothing attached');

  const once = await attach(alice, `/studies/${shared.study.id}`, 'analysis');
  const twice = await server.post(base, { driveId: ids.nas, path: '/analysis' }, { key: alice.key });
  t.equal(twice.status, 409, 'the same folder twice');
  t.match(twice.body.message, `attachment ${once.id}`);
});

t.test('PATCH {primary: true}: exactly one primary afterwards; the previous one stays attached', async (t) => {
  const tree = await make.tree(alice, admin, 'PRIVATE');
  const base = `/assays/${tree.assay.id}`;
  const first = await attach(alice, base, 'raw');
  const second = await attach(alice, base, 'analysis');
  t.equal(first.primary, true);
  t.equal(second.primary, false);
  const res = await server.request('PATCH', api(`${base}/storage-folders/${second.id}`), { key: alice.key, body: { primary: true } });
  t.equal(res.status, 200, res.text);
  t.match(res.body, { id: second.id, primary: true });
  t.same((await list(alice, base)).map((f) => [f.id, f.primary]), [[second.id, true], [first.id, false]], 'primary first');
  t.equal(await primaries('assay', tree.assay.id), 1);
  t.match(await activity(second.id), [
    { event_type: 'storage_folder.attached' },
    { event_type: 'storage_folder.primary_changed', category: 'RESEARCH', data: { folderId: second.id, previousFolderId: first.id }, assay_id: tree.assay.id },
  ]);
  const again = await server.request('PATCH', api(`${base}/storage-folders/${second.id}`), { key: alice.key, body: { primary: true } });
  t.equal(again.status, 200);
  t.equal((await activity(second.id)).length, 2, 'no change, no activity');
  const off = await server.request('PATCH', api(`${base}/storage-folders/${second.id}`), { key: alice.key, body: { primary: false } });
  t.equal(off.status, 400);
  t.match(off.body, { statusCode: 400, message: /primary must be true/ });
  const missing = await server.request('PATCH', api(`${base}/storage-folders/${second.id}`), { key: alice.key, body: {} });
  t.equal(missing.status, 400);
  t.match(missing.body.errors, [{ field: 'primary', message: 'is required' }]);
  const unknown = randomUUID();
  const notFound = await server.request('PATCH', api(`${base}/storage-folders/${unknown}`), { key: alice.key, body: { primary: true } });
  t.equal(notFound.status, 404);
  t.match(notFound.body, { message: `Storage folder with id ${unknown} not found` });
  t.equal(await primaries('assay', tree.assay.id), 1);
});

t.test('DELETE detaches (204); the folder on the drive stays; the oldest remaining folder becomes primary', async (t) => {
  const tree = await make.tree(alice, admin, 'PRIVATE');
  const base = `/studies/${tree.study.id}`;
  const first = await attach(alice, base, 'raw');
  const second = await attach(alice, base, 'analysis');
  const third = await attach(alice, base, 'shared');
  const res = await server.delete(api(`${base}/storage-folders/${first.id}`), { key: alice.key });
  t.equal(res.status, 204);
  t.equal(res.text, '');
  t.ok((await fs.stat(path.join(nas, 'raw'))).isDirectory(), 'the drive folder stays intact');
  t.equal((await server.get(api(`${base}/storage-folders/${first.id}`), { key: alice.key })).status, 404);
  t.equal((await server.delete(api(`${base}/storage-folders/${first.id}`), { key: alice.key })).status, 404, 'a second delete is a 404');
  t.same((await list(alice, base)).map((f) => [f.id, f.primary]), [[second.id, true], [third.id, false]]);
  t.match((await activity(first.id)).at(-1), { event_type: 'storage_folder.detached', category: 'RESEARCH', data: { folderId: first.id, path: 'raw', newPrimaryFolderId: second.id }, study_id: tree.study.id });
  t.equal((await server.delete(api(`${base}/storage-folders/${third.id}`), { key: alice.key })).status, 204);
  t.notOk('newPrimaryFolderId' in (await activity(third.id)).at(-1)!.data, 'a non-primary detach changes no primary');
  t.equal((await server.delete(api(`${base}/storage-folders/${second.id}`), { key: alice.key })).status, 204);
  t.same(await list(alice, base), []);
});

t.test('an attachment resolves only under its own parent', async (t) => {
  const f = await attach(alice, `/studies/${shared.study.id}`, 'raw');
  for (const base of [`/projects/${shared.project.id}`, `/assays/${shared.assay.id}`, `/studies/${secret.study.id}`]) {
    const p = api(`${base}/storage-folders/${f.id}`);
    const res = await server.get(p, { key: alice.key });
    t.equal(res.status, 404, base);
    t.match(res.body, { statusCode: 404, message: `Storage folder with id ${f.id} not found` });
    t.equal((await server.request('PATCH', p, { key: alice.key, body: { primary: true } })).status, 404);
    t.equal((await server.delete(p, { key: alice.key })).status, 404);
  }
});

t.test('permissions: other organization and non-members of a PRIVATE parent get 404, viewers of a PROTECTED one 403 on writes', async (t) => {
  const viewable = await attach(alice, `/assays/${shared.assay.id}`, 'images');
  const hidden = await attach(alice, `/assays/${secret.assay.id}`, 'images');
  const requests = (who: Member, base: string, id: string) => ({
    list: () => server.get(api(`${base}/storage-folders`), { key: who.key }),
    get: () => server.get(api(`${base}/storage-folders/${id}`), { key: who.key }),
    attach: () => server.post(api(`${base}/storage-folders`), { driveId: ids.nas, path: 'shared' }, { key: who.key }),
    primary: () => server.request('PATCH', api(`${base}/storage-folders/${id}`), { key: who.key, body: { primary: true } }),
    detach: () => server.delete(api(`${base}/storage-folders/${id}`), { key: who.key }),
  });
  for (const [base, id] of [[`/assays/${shared.assay.id}`, viewable.id], [`/assays/${secret.assay.id}`, hidden.id]]) {
    for (const [name, call] of Object.entries(requests(outsider, base, id))) {
      const res = await call();
      t.equal(res.status, 404, `outsider ${name} ${base}`);
      t.match(res.body, { message: /^Assay with id .* not found$/ });
    }
  }
  for (const [name, call] of Object.entries(requests(bob, `/assays/${secret.assay.id}`, hidden.id))) {
    t.equal((await call()).status, 404, `bob ${name} on a PRIVATE assay`);
  }
  const bobShared = requests(bob, `/assays/${shared.assay.id}`, viewable.id);
  t.equal((await bobShared.list()).status, 200);
  t.equal((await bobShared.get()).status, 200);
  for (const call of [bobShared.attach, bobShared.primary, bobShared.detach]) {
    const res = await call();
    t.equal(res.status, 403, 'bob writes on a PROTECTED assay');
    t.equal(res.text, '', '403 has an empty body');
  }
  for (const who of [alice, admin]) {
    const tree = await make.tree(alice, admin, 'PRIVATE');
    const base = `/projects/${tree.project.id}`;
    const r = requests(who, base, '');
    const made = await r.attach();
    t.equal(made.status, 201, made.text);
    const mine = requests(who, base, made.body.id);
    t.equal((await mine.list()).status, 200);
    t.equal((await mine.get()).status, 200);
    t.equal((await mine.primary()).status, 200);
    t.equal((await mine.detach()).status, 204);
  }
  const publicTree = await make.tree(alice, admin, 'PUBLIC');
  t.equal((await requests(bob, `/studies/${publicTree.study.id}`, '').attach()).status, 403, 'a PUBLIC project is viewed by everyone, changed by its members only');
  await server.grant(publicTree.project.id, bob);
  t.equal((await requests(bob, `/studies/${publicTree.study.id}`, '').attach()).status, 201, 'a member contributes to a PUBLIC project');
  t.equal((await server.sql('select id from storage_folder where id in (?, ?)', [viewable.id, hidden.id])).length, 2, 'refused writes changed nothing');
});

t.test('list: page envelope, primary first, only this parent\'s folders', async (t) => {
  const tree = await make.tree(alice, admin, 'PROTECTED');
  for (const p of ['raw', 'analysis', 'shared']) await attach(alice, `/assays/${tree.assay.id}`, p);
  await attach(alice, `/studies/${tree.study.id}`, 'images');
  const page = await server.get(api(`/assays/${tree.assay.id}/storage-folders?size=2`), { key: bob.key });
  t.equal(page.status, 200);
  t.match(page.body, { totalElements: 3, totalPages: 2, size: 2, number: 0, first: true, last: false });
  t.same(page.body.content.map((f: { path: string }) => f.path), ['raw', 'analysis'], 'primary first, then oldest first');
  const sorted = await server.get(api(`/assays/${tree.assay.id}/storage-folders?sort=path,asc`), { key: bob.key });
  t.same(sorted.body.content.map((f: { path: string }) => f.path), ['analysis', 'raw', 'shared']);
  t.same((await list(bob, `/studies/${tree.study.id}`)).map((f) => f.path), ['images']);
  t.equal((await server.get(api(`/assays/${randomUUID()}/storage-folders`), { key: bob.key })).status, 404);
  t.equal((await server.get(api(`/assays/${tree.assay.id}/storage-folders?sort=driveId,asc`), { key: bob.key })).status, 400);
});

t.test('tools list_project/study/assay_storage_folders equal REST; a parent not viewable is a not-found result', async (t) => {
  const tree = await make.tree(alice, admin, 'PROTECTED');
  for (const { base } of bases(tree)) for (const p of ['raw', 'analysis']) await attach(alice, base, p);
  const client = await connectMcp(server.url, { key: bob.key, teardown: t.teardown.bind(t) });
  for (const { kind, id, base } of bases(tree)) {
    const tool = `list_${kind}_storage_folders`;
    await expectToolMatchesRest(t, server, client, bob.key, tool, { [`${kind}Id`]: id }, `${base}/storage-folders`);
    await expectToolMatchesRest(t, server, client, bob.key, tool, { [`${kind}Id`]: id, page: 1, size: 1 }, `${base}/storage-folders?page=1&size=1`);
  }
  for (const { kind, id } of bases(secret)) {
    const res = await callTool(client, `list_${kind}_storage_folders`, { [`${kind}Id`]: id });
    t.ok(res.isError, `${kind} of a PRIVATE project`);
    t.match(resultText(res), /not found/);
  }
  const outsiderClient = await connectMcp(server.url, { key: outsider.key, teardown: t.teardown.bind(t) });
  t.ok((await callTool(outsiderClient, 'list_project_storage_folders', { projectId: tree.project.id })).isError, 'another organization');
  const tools = (await client.listTools()).tools.map((x) => x.name);
  t.notOk(tools.some((n) => /^get_(project|study|assay)_storage_folder$/.test(n)), 'no look-up tool (the spec lists none)');
});

t.test('deleting a study or an assay detaches its folders in the same transaction; the drive keeps them', async (t) => {
  const tree = await make.tree(alice, admin, 'PRIVATE');
  await attach(alice, `/assays/${tree.assay.id}`, 'raw');
  await attach(alice, `/studies/${tree.study.id}`, 'analysis');
  t.equal((await server.delete(api(`/studies/${tree.study.id}`), { key: alice.key })).status, 204);
  t.same(await server.sql('select id from storage_folder where parent_id in (?, ?)', [tree.study.id, tree.assay.id]), []);
  t.ok((await fs.stat(path.join(nas, 'analysis'))).isDirectory());
});
