import t from 'tap';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startTestServer } from '../../support/server.ts';
import { callTool, connectMcp, expectToolMatchesRest, resultText } from '../../support/mcp.ts';
import { bootstrap, PLUGINS, projectsApi } from './support.ts';

// Storage drives and shared storage folders: read-only resources provisioned by the bootstrap
// file's `storageDrives` section; credentials are sealed and never returned.
const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'labdata-drives-'));
t.teardown(() => fs.rm(tmp, { recursive: true, force: true }));
const dataDir = path.join(tmp, 'data');
await fs.mkdir(dataDir);
const server = await startTestServer(t, { plugins: PLUGINS, env: { LABDATA_DATA_DIR: dataDir }, jobs: true });
const org = await server.organization();
const other = await server.organization();
const member = await server.member(org);
const admin = await server.admin(org);
const outsider = await server.admin(other);
const api = (p: string) => '/api/v1' + p;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const SECRET = 'wJalrXUtnFEMI-very-secret-key';

const out = await bootstrap(server, {
  storageDrives: [
    {
      ref: 'nas',
      organization: org,
      name: 'Lab NAS',
      kind: 'LOCAL',
      rootPath: path.join(tmp, 'nas'),
      sharedFolders: [{ ref: 'refs', path: '/reference/genomes/', description: 'Reference genomes' }, { path: 'protocols', name: 'Lab protocols' }],
    },
    {
      ref: 'bucket',
      organization: org,
      name: 'Archive bucket',
      kind: 'S3',
      settings: { endpoint: 'https://s3.example.test', region: 'eu-west-1', bucket: 'archive' },
      prefix: 'lab/',
      credentials: { accessKeyId: 'AKIAEXAMPLE', secretAccessKey: SECRET },
    },
    { ref: 'theirs', organization: other, name: 'Their NAS', kind: 'LOCAL', rootPath: path.join(tmp, 'theirs'), sharedFolders: [{ ref: 'their-share', path: 'x' }] },
  ],
});
const nasId = out.storageDrives.nas.id;
const bucketId = out.storageDrives.bucket.id;
const theirsId = out.storageDrives.theirs.id;
const refsId = out.storageDrives.nas.sharedFolders.refs.id;
const theirShareId = out.storageDrives.theirs.sharedFolders['their-share'].id;

t.test('bootstrap output: drive ids by ref, shared folder ids by ref', async (t) => {
  t.match(out.storageDrives, { nas: { id: UUID, sharedFolders: { refs: { id: UUID } } }, bucket: { id: UUID }, theirs: { id: UUID } });
  t.notOk('sharedFolders' in out.storageDrives.bucket);
});

t.test('GET /storage-drives: the page envelope, the embedded default drive first created on first use', async (t) => {
  // Concurrent first uses agree on one default drive.
  const all = await Promise.all([1, 2, 3, 4].map(() => server.get(api('/storage-drives'), { key: member.key })));
  for (const res of all) t.equal(res.status, 200);
  const res = all[0];
  t.match(res.body, { totalElements: 3, totalPages: 1, number: 0 });
  t.same(res.body.content.map((d: { name: string }) => d.name), ['Archive bucket', 'Default cloud storage', 'Lab NAS'], 'sorted by name');
  const [bucket, embedded, nas] = res.body.content;
  t.same(Object.keys(embedded).sort(), ['createdAt', 'hasCredentials', 'id', 'isDefault', 'kind', 'name', 'organizationId', 'settings', 'updatedAt']);
  t.match(embedded, {
    id: UUID,
    organizationId: org,
    kind: 'LOCAL',
    isDefault: true,
    hasCredentials: false,
    settings: { rootPath: path.join(dataDir, 'storage', org), projectRoot: 'projects', timeoutSeconds: 10 },
  });
  t.match(nas, { id: nasId, kind: 'LOCAL', isDefault: false, hasCredentials: false, settings: { rootPath: path.join(tmp, 'nas') } });
  t.same(bucket.settings, { endpoint: 'https://s3.example.test', region: 'eu-west-1', bucket: 'archive', prefix: 'lab/', forcePathStyle: false, projectRoot: 'projects', timeoutSeconds: 10 });
  t.match(bucket, { id: bucketId, kind: 'S3', hasCredentials: true });
  t.equal((await server.sql('select id from storage_drive where organization_id = ? and is_default', [org])).length, 1);
  const paged = await server.get(api('/storage-drives?page=1&size=2'), { key: member.key });
  t.match(paged.body, { totalElements: 3, totalPages: 2, size: 2, number: 1 });
  t.equal(paged.body.content.length, 1);
});

t.test('credentials are sealed at rest and never returned', async (t) => {
  for (const p of ['/storage-drives', `/storage-drives/${bucketId}`]) {
    const res = await server.get(api(p), { key: admin.key });
    t.equal(res.status, 200);
    t.notMatch(res.text, SECRET);
    t.notMatch(res.text, 'AKIAEXAMPLE');
    t.notMatch(res.text, /credentials|secretAccessKey|accessKeyId/);
  }
  const [row] = await server.sql<{ credentials: string }>('select credentials from storage_drive where id = ?', [bucketId]);
  t.match(row.credentials, /^v1\./, 'sealed by the secrets service');
  t.notMatch(row.credentials, SECRET);
  t.same(server.kernel.services.secrets.open(row.credentials), { accessKeyId: 'AKIAEXAMPLE', secretAccessKey: SECRET });
});

t.test('GET /storage-drives/{id}: member and admin see it; another organization, unknown id: 404 naming it; no key: 401', async (t) => {
  for (const who of [member, admin]) {
    const res = await server.get(api(`/storage-drives/${nasId}`), { key: who.key });
    t.equal(res.status, 200);
    t.match(res.body, { id: nasId, name: 'Lab NAS' });
  }
  const foreign = await server.get(api(`/storage-drives/${nasId}`), { key: outsider.key });
  t.equal(foreign.status, 404);
  t.match(foreign.body, { message: `Storage drive with id ${nasId} not found` });
  t.equal((await server.get(api(`/storage-drives/${theirsId}`), { key: member.key })).status, 404);
  const unknown = randomUUID();
  t.match((await server.get(api(`/storage-drives/${unknown}`), { key: member.key })).body, { message: `Storage drive with id ${unknown} not found` });
  t.equal((await server.get(api('/storage-drives/not-a-uuid'), { key: member.key })).status, 400);
  const listed = await server.get(api('/storage-drives'), { key: outsider.key });
  t.same(listed.body.content.map((d: { name: string }) => d.name), ['Default cloud storage', 'Their NAS'], 'only the caller organization');
  t.equal((await server.get(api('/storage-drives'))).status, 401);
  t.equal((await server.get(api('/shared-storage-folders'))).status, 401);
});

t.test('shared storage folders: list and get, scoped to the organization', async (t) => {
  const res = await server.get(api('/shared-storage-folders?sort=path,asc'), { key: member.key });
  t.equal(res.status, 200);
  t.match(res.body, { totalElements: 2 });
  t.same(res.body.content.map((f: Record<string, unknown>) => [f.name, f.path, f.driveId, f.description]), [
    ['Lab protocols', 'protocols', nasId, null],
    ['genomes', 'reference/genomes', nasId, 'Reference genomes'],
  ]);
  const one = await server.get(api(`/shared-storage-folders/${refsId}`), { key: admin.key });
  t.equal(one.status, 200);
  t.same(Object.keys(one.body).sort(), ['createdAt', 'description', 'driveId', 'id', 'name', 'organizationId', 'path']);
  t.same(one.body, res.body.content[1]);
  const foreign = await server.get(api(`/shared-storage-folders/${theirShareId}`), { key: member.key });
  t.equal(foreign.status, 404);
  t.match(foreign.body, { message: `Shared storage folder with id ${theirShareId} not found` });
  t.equal((await server.get(api('/shared-storage-folders'), { key: outsider.key })).body.totalElements, 1);
});

t.test('tools equal REST: list_storage_drives, get_storage_drive, list_shared_storage_folders, get_shared_storage_folder', async (t) => {
  const client = await connectMcp(server.url, { key: member.key, teardown: t.teardown.bind(t) });
  await expectToolMatchesRest(t, server, client, member.key, 'list_storage_drives', {}, '/storage-drives');
  await expectToolMatchesRest(t, server, client, member.key, 'list_storage_drives', { page: 1, size: 1 }, '/storage-drives?page=1&size=1');
  await expectToolMatchesRest(t, server, client, member.key, 'get_storage_drive', { id: bucketId }, `/storage-drives/${bucketId}`);
  await expectToolMatchesRest(t, server, client, member.key, 'list_shared_storage_folders', {}, '/shared-storage-folders');
  await expectToolMatchesRest(t, server, client, member.key, 'list_shared_storage_folders', { page: 0, size: 1 }, '/shared-storage-folders?page=0&size=1');
  await expectToolMatchesRest(t, server, client, member.key, 'get_shared_storage_folder', { id: refsId }, `/shared-storage-folders/${refsId}`);
  for (const [tool, id] of [['get_storage_drive', theirsId], ['get_shared_storage_folder', theirShareId]]) {
    const res = await callTool(client, tool, { id });
    t.ok(res.isError, `${tool}: another organization's id is a not-found result`);
    t.match(resultText(res), /not found/);
  }
  const bucketTool = await callTool(client, 'get_storage_drive', { id: bucketId });
  t.notMatch(resultText(bucketTool), SECRET);
});

t.test('a bootstrap drive with `default: true` becomes the default cloud storage for new projects', async (t) => {
  const org2 = await server.organization();
  const m = await server.member(org2);
  const root = path.join(tmp, 'nas2');
  await fs.mkdir(root);
  const made = await bootstrap(server, { storageDrives: [{ ref: 'd', organization: org2, name: 'Main NAS', kind: 'LOCAL', rootPath: root, projectRoot: '/research/projects/', default: true }] });
  const drives = await server.get(api('/storage-drives'), { key: m.key });
  t.match(drives.body.content, [{ id: made.storageDrives.d.id, isDefault: true, settings: { projectRoot: 'research/projects' } }], 'no embedded default besides it');
  const projects = projectsApi(server);
  const p = await projects.create(m);
  t.equal(p.status, 201, p.text);
  await projects.waitFor(m, p.body.id, 'ACTIVE');
  const name = `${p.body.code}-${p.body.id.slice(0, 8)}`;
  t.match(await projects.folders(m, p.body.id), [{ driveId: made.storageDrives.d.id, path: `research/projects/${name}`, primary: true }]);
  t.ok((await fs.stat(path.join(root, 'research', 'projects', name))).isDirectory(), 'the project root chain is created on the default drive');
  // A second default replaces the first.
  const again = await bootstrap(server, { storageDrives: [{ ref: 'e', organization: org2, name: 'Newer', kind: 'LOCAL', rootPath: root, default: true }] });
  const after = await server.get(api('/storage-drives'), { key: m.key });
  t.same(after.body.content.filter((d: { isDefault: boolean }) => d.isDefault).map((d: { id: string }) => d.id), [again.storageDrives.e.id]);
});

t.test('bootstrap rejects a bad drive with one reason naming the item, and writes nothing', async (t) => {
  const count = async () => Number((await server.sql<{ n: string }>('select (select count(*) from storage_drive) + (select count(*) from shared_storage_folder) as n'))[0].n);
  const before = await count();
  const local = { ref: 'bad', organization: org, name: 'Bad', kind: 'LOCAL', rootPath: '/srv/x' };
  const s3 = { ref: 'bad', organization: org, name: 'Bad', kind: 'S3', endpoint: 'http://127.0.0.1:9', region: 'r', bucket: 'b', credentials: { accessKeyId: 'a', secretAccessKey: 's' } };
  const cases: [string, Record<string, unknown>, RegExp][] = [
    ['unknown organization', { ...local, organization: 'nope' }, /storageDrives "bad".*unknown organization "nope"/],
    ['unknown kind', { ...local, kind: 'FTP' }, /storageDrives "bad": kind/],
    ['blank name', { ...local, name: ' ' }, /storageDrives "bad": name must not be blank/],
    ['LOCAL without rootPath', { ...local, rootPath: undefined }, /rootPath is required for a LOCAL drive/],
    ['relative rootPath', { ...local, rootPath: 'srv/x' }, /rootPath must be an absolute path/],
    ['LOCAL with credentials', { ...local, credentials: { accessKeyId: 'a', secretAccessKey: 's' } }, /credentials is only for S3 drives/],
    ['LOCAL with a bucket', { ...local, bucket: 'b' }, /bucket is only for S3 drives/],
    ['S3 without credentials', { ...s3, credentials: undefined }, /credentials is required for an S3 drive/],
    ['S3 without bucket', { ...s3, bucket: undefined }, /bucket is required for an S3 drive/],
    ['S3 with a bad endpoint', { ...s3, endpoint: 'ftp://x' }, /endpoint must be an https URL, not ftp/],
    ['S3 with a file: endpoint', { ...s3, endpoint: 'file:///etc' }, /endpoint must be an https URL, not file/],
    ['S3 over plain http off loopback', { ...s3, endpoint: 'http://minio.example.org:9000' }, /endpoint must be an https URL \(plain http is allowed to a loopback address only\)/],
    ['S3 at the metadata address', { ...s3, endpoint: 'https://169.254.169.254' }, /endpoint must not be a link-local or cloud metadata address \(set LABDATA_VENDOR_ALLOW_LINK_LOCAL=true/],
    ['S3 at fe80::', { ...s3, endpoint: 'https://[fe80::1]:9000' }, /endpoint must not be a link-local/],
    ['LOCAL at the filesystem root', { ...local, rootPath: '/' }, /rootPath must not be the filesystem root/],
    ['LOCAL in /etc', { ...local, rootPath: '/etc/lab' }, /rootPath must not be in the system directory \/etc/],
    ['LOCAL at /var', { ...local, rootPath: '/var/' }, /rootPath must not be the system directory \/var/],
    ['LOCAL in /proc (in settings)', { ref: 'bad', organization: org, name: 'Bad', kind: 'LOCAL', settings: { rootPath: '/proc/self/root' } }, /rootPath must not be in the system directory \/proc/],
    ['a secret given twice', { ...s3, secretAccessKey: 'x' }, /secretAccessKey is also in credentials/],
    ['S3 with blank secret', { ...s3, credentials: { accessKeyId: 'a', secretAccessKey: '' } }, /credentials\.secretAccessKey must not be blank/],
    ['shared folder path with ..', { ...local, sharedFolders: [{ path: 'a/../b' }] }, /sharedFolders\.0 must not contain ".."/],
    ['shared folder twice', { ...local, sharedFolders: [{ path: 'a' }, { path: '/a/' }] }, /shared folder "a" is listed twice/],
    ['bad timeout', { ...local, timeoutSeconds: 0 }, /timeoutSeconds/],
  ];
  for (const [what, item, reason] of cases) {
    const good = { ref: 'ok', organization: org, name: 'Fine', kind: 'LOCAL', rootPath: '/srv/fine' };
    await t.rejects(bootstrap(server, { storageDrives: [good, item] }), { message: reason }, what);
  }
  t.equal(await count(), before, 'nothing was written');
});

t.test('drive settings: the kind\'s public fields are shown; pass, bearer, authorization and unknown fields are sealed secrets', async (t) => {
  const secrets = { pass: 'pass-value-61', bearer: 'bearer-value-72', authorization: 'Basic auth-value-83', frobnicate: 'unknown-value-94' };
  const made = await bootstrap(server, {
    storageDrives: [
      { ref: 'n', organization: org, name: 'NAS with extras', kind: 'LOCAL', rootPath: path.join(tmp, 'nas'), ...secrets },
      {
        ref: 's', organization: org, name: 'S3 with extras', kind: 'S3',
        settings: { endpoint: 'http://127.0.0.1:9', region: 'r', bucket: 'b', pass: secrets.pass, frobnicate: secrets.frobnicate },
        bearer: secrets.bearer, authorization: secrets.authorization,
        credentials: { accessKeyId: 'a', secretAccessKey: SECRET },
      },
    ],
  });
  const local = await server.get(api(`/storage-drives/${made.storageDrives.n.id}`), { key: member.key });
  t.same(Object.keys(local.body.settings).sort(), ['projectRoot', 'rootPath', 'timeoutSeconds']);
  t.equal(local.body.hasCredentials, true);
  const s3 = await server.get(api(`/storage-drives/${made.storageDrives.s.id}`), { key: member.key });
  t.same(Object.keys(s3.body.settings).sort(), ['bucket', 'endpoint', 'forcePathStyle', 'prefix', 'projectRoot', 'region', 'timeoutSeconds']);
  const list = await server.get(api('/storage-drives?size=200'), { key: member.key });
  for (const r of [local, s3, list]) for (const value of [...Object.values(secrets), SECRET]) t.notMatch(r.text, value);
  const rows = await server.sql<{ id: string; settings: Record<string, unknown>; credentials: string }>(
    'select id, settings, credentials from storage_drive where id in (?, ?)', [made.storageDrives.n.id, made.storageDrives.s.id]);
  for (const row of rows) {
    for (const value of Object.values(secrets)) t.notMatch(JSON.stringify(row), value, 'nothing in plain text at rest');
    const opened = server.kernel.services.secrets.open<Record<string, unknown>>(row.credentials);
    if (row.id === made.storageDrives.n.id) t.same(opened, secrets);
    else t.same(opened, { accessKeyId: 'a', secretAccessKey: SECRET, ...secrets });
  }
});
