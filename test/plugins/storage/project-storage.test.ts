import t from 'tap';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { HeadObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { startTestServer } from '../../support/server.ts';
import { startLocalS3, startSilentEndpoint } from '../../support/stubs/s3.ts';
import { activityOf, drives, PLUGINS, projectsApi } from './support.ts';

// Spec, Project `storage`: the project's primary folder at creation, for each option, each
// failure, and a drive that is down or slow (provisioning through the job queue).
const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'labdata-project-storage-'));
t.teardown(() => fs.rm(tmp, { recursive: true, force: true }));
const dataDir = path.join(tmp, 'data');
const nas = path.join(tmp, 'nas');
await fs.mkdir(dataDir);
await fs.mkdir(path.join(nas, 'lab', 'existing'), { recursive: true });
const s3 = await startLocalS3(t);
const silent = await startSilentEndpoint(t);

const server = await startTestServer(t, { plugins: PLUGINS, env: { LABDATA_DATA_DIR: dataDir }, jobs: true });
const org = await server.organization();
const other = await server.organization();
const alice = await server.member(org);
const outsider = await server.member(other);
const projects = projectsApi(server);
const s3Item = { kind: 'S3', endpoint: s3.endpoint, region: 'us-east-1', bucket: s3.bucket, forcePathStyle: true, credentials: s3.credentials };
const ids = await drives(server, [
  { ref: 'nas', organization: org, name: 'Lab NAS', kind: 'LOCAL', rootPath: nas },
  { ref: 's3', organization: org, name: 'Bucket', ...s3Item, prefix: 'lab', timeoutSeconds: 5 },
  { ref: 'unmounted', organization: org, name: 'Unmounted NAS', kind: 'LOCAL', rootPath: path.join(tmp, 'unmounted') },
  { ref: 'slow', organization: org, name: 'Slow S3', ...s3Item, endpoint: silent, timeoutSeconds: 0.3 },
  { ref: 'foreign', organization: other, name: 'Their NAS', kind: 'LOCAL', rootPath: nas },
]);
const defaultDriveId = (await server.get('/api/v1/storage-drives', { key: alice.key })).body.content.find((d: { isDefault: boolean }) => d.isDefault).id;
const s3Client = new S3Client({ endpoint: s3.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: s3.credentials });
t.teardown(() => s3Client.destroy());
const s3Has = (key: string) => s3Client.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: key })).then(() => true, () => false);
const isDir = (p: string) => fs.stat(p).then((s) => s.isDirectory(), () => false);
const projectCount = async () => Number((await server.sql<{ n: string }>('select count(*) as n from project'))[0].n);

t.test('storage omitted: a new folder in the default cloud storage under the project root, made at once', async (t) => {
  const res = await projects.create(alice);
  t.equal(res.status, 201, res.text);
  t.equal(res.body.status, 'ACTIVE', 'the embedded default drive is local: the folder exists when the response is sent');
  const id = res.body.id;
  const folders = await projects.folders(alice, id);
  const name = `${res.body.code}-${id.slice(0, 8)}`;
  t.match(folders, [{ parentType: 'PROJECT', parentId: id, driveId: defaultDriveId, path: `projects/${name}`, name, primary: true }]);
  t.equal(folders.length, 1, 'exactly one primary folder');
  t.ok(await isDir(path.join(dataDir, 'storage', org, 'projects', name)), 'the folder exists under <dataDir>/storage/<organizationId>/projects');
  const events = await activityOf(server, id);
  t.match(events.find((e) => e.event_type === 'storage_folder.attached'), {
    category: 'RESEARCH',
    data: { folderId: folders[0].id, driveId: defaultDriveId, path: `projects/${name}`, primary: true, mode: 'DEFAULT' },
  });
  t.match(events.find((e) => e.event_type === 'storage_folder.created'), { category: 'RESEARCH', data: { folderId: folders[0].id, path: `projects/${name}` } });
  t.notOk(events.some((e) => e.event_type === 'project.status_changed'), 'no provisioning round trip');
});

t.test('CREATE_NEW: a new folder named `name` (or after the project code) under `path`', async (t) => {
  const named = await projects.create(alice, { storage: { driveId: ids.nas, mode: 'CREATE_NEW', path: '/lab/', name: 'Screen 7' } });
  t.equal(named.status, 201, named.text);
  await projects.waitFor(alice, named.body.id, 'ACTIVE');
  t.match(await projects.folders(alice, named.body.id), [{ driveId: ids.nas, path: 'lab/Screen 7', name: 'Screen 7', primary: true }]);
  t.ok(await isDir(path.join(nas, 'lab', 'Screen 7')));

  const unnamed = await projects.create(alice, { storage: { driveId: ids.nas, mode: 'CREATE_NEW', path: 'lab' } });
  t.equal(unnamed.status, 201, unnamed.text);
  await projects.waitFor(alice, unnamed.body.id, 'ACTIVE');
  const name = `${unnamed.body.code}-${unnamed.body.id.slice(0, 8)}`;
  t.match(await projects.folders(alice, unnamed.body.id), [{ path: `lab/${name}`, name, primary: true }]);
  t.ok(await isDir(path.join(nas, 'lab', name)));

  const atRoot = await projects.create(alice, { storage: { driveId: ids.nas, mode: 'CREATE_NEW', path: '/', name: 'top' } });
  await projects.waitFor(alice, atRoot.body.id, 'ACTIVE');
  t.match(await projects.folders(alice, atRoot.body.id), [{ path: 'top', name: 'top' }]);
  t.ok(await isDir(path.join(nas, 'top')));
});

t.test('USE_EXISTING: the existing folder at `path` becomes the primary folder; nothing is created', async (t) => {
  const before = await fs.readdir(path.join(nas, 'lab', 'existing'));
  const res = await projects.create(alice, { storage: { driveId: ids.nas, mode: 'USE_EXISTING', path: 'lab/existing' } });
  t.equal(res.status, 201, res.text);
  t.equal(res.body.status, 'ACTIVE', 'no external work is left: ACTIVE at once');
  const folders = await projects.folders(alice, res.body.id);
  t.match(folders, [{ driveId: ids.nas, path: 'lab/existing', name: 'existing', primary: true }]);
  t.same(await fs.readdir(path.join(nas, 'lab', 'existing')), before);
  t.match((await activityOf(server, res.body.id)).find((e) => e.event_type === 'storage_folder.attached'), { data: { mode: 'USE_EXISTING', path: 'lab/existing' } });
  t.notOk((await activityOf(server, res.body.id)).some((e) => e.event_type === 'storage_folder.created'));
});

t.test('the default cloud drive ignores `path`: the folder goes under the project root', async (t) => {
  const named = await projects.create(alice, { storage: { driveId: defaultDriveId, mode: 'CREATE_NEW', path: 'somewhere/else', name: 'Mine' } });
  t.equal(named.status, 201, named.text);
  await projects.waitFor(alice, named.body.id, 'ACTIVE');
  t.match(await projects.folders(alice, named.body.id), [{ driveId: defaultDriveId, path: 'projects/Mine', name: 'Mine', primary: true }]);
  t.ok(await isDir(path.join(dataDir, 'storage', org, 'projects', 'Mine')));
  t.notOk(await isDir(path.join(dataDir, 'storage', org, 'somewhere')));

  const existing = await projects.create(alice, { storage: { driveId: defaultDriveId, mode: 'USE_EXISTING', path: 'does/not/exist' } });
  t.equal(existing.status, 201, 'USE_EXISTING with an ignored path is not checked either');
  await projects.waitFor(alice, existing.body.id, 'ACTIVE');
  const name = `${existing.body.code}-${existing.body.id.slice(0, 8)}`;
  t.match(await projects.folders(alice, existing.body.id), [{ path: `projects/${name}`, primary: true }]);
});

t.test('a new folder is one project\'s: the same name at once, or a name another project has, is a 400', async (t) => {
  // Two creates naming the same new folder at the same moment: the folder is made once, for one of them.
  for (let round = 0; round < 3; round++) {
    const storage = { driveId: ids.nas, mode: 'CREATE_NEW', path: 'lab', name: `race-${round}` };
    const results = await Promise.all([projects.create(alice, { storage }), projects.create(alice, { storage })]);
    t.same(results.map((r) => r.status).sort(), [201, 400], `round ${round}: one 201, one 400`);
    const refused = results.find((r) => r.status === 400)!;
    t.equal(refused.body.errors[0].field, 'storage.name');
  }
  // The default drive ignores `path`, not `name`: another project's folder there is refused too.
  const first = await projects.create(alice, { storage: { driveId: defaultDriveId, mode: 'CREATE_NEW', name: 'Shared name' } });
  t.equal(first.status, 201, first.text);
  const second = await projects.create(alice, { storage: { driveId: defaultDriveId, mode: 'CREATE_NEW', name: 'Shared name' } });
  t.equal(second.status, 400, 'a name taken on the default drive');
  t.equal(second.body.errors[0].field, 'storage.name');
  const generated = `${first.body.code}-${first.body.id.slice(0, 8)}`;
  await fs.mkdir(path.join(dataDir, 'storage', org, 'projects', generated), { recursive: true });
  const taken = await projects.create(alice, { storage: { driveId: defaultDriveId, mode: 'CREATE_NEW', name: generated } });
  t.equal(taken.status, 400, 'an existing folder of the default drive');
});

t.test('S3 drive: CREATE_NEW writes the folder marker through the AWS SDK; USE_EXISTING finds it', async (t) => {
  // The drive's prefix `lab/` holds nothing yet: the bucket answers, so that is a 400 at once.
  const early = await projects.create(alice, { storage: { driveId: ids.s3, mode: 'CREATE_NEW', path: '', name: 'screens' } });
  t.equal(early.status, 400);
  t.match(early.body.errors, [{ field: 'storage.path', message: 'folder "/" does not exist on storage drive "Bucket"' }]);
  await s3Client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: 'lab/', Body: new Uint8Array(0) }));
  const root = await projects.create(alice, { storage: { driveId: ids.s3, mode: 'CREATE_NEW', path: '', name: 'screens' } });
  t.equal(root.status, 201, root.text);
  await projects.waitFor(alice, root.body.id, 'ACTIVE');
  t.ok(await s3Has('lab/screens/'), 'marker object of the new folder');

  const child = await projects.create(alice, { storage: { driveId: ids.s3, mode: 'CREATE_NEW', path: 'screens', name: 'run 1' } });
  t.equal(child.status, 201, child.text);
  await projects.waitFor(alice, child.body.id, 'ACTIVE');
  t.ok(await s3Has('lab/screens/run 1/'));
  const used = await projects.create(alice, { storage: { driveId: ids.s3, mode: 'USE_EXISTING', path: 'screens/run 1' } });
  t.equal(used.status, 201, used.text);
  t.match(await projects.folders(alice, used.body.id), [{ driveId: ids.s3, path: 'screens/run 1', name: 'run 1', primary: true }]);
  const missing = await projects.create(alice, { storage: { driveId: ids.s3, mode: 'USE_EXISTING', path: 'screens/run 2' } });
  t.equal(missing.status, 400);
  t.match(missing.body.errors, [{ field: 'storage.path', message: 'folder "screens/run 2" does not exist on storage drive "Bucket"' }]);
});

t.test('validation fails at once, with nothing created: 400 naming the field, 404 naming the drive', async (t) => {
  const before = await projectCount();
  const unknown = randomUUID();
  const cases: [string, unknown, number, unknown][] = [
    ['USE_EXISTING of a missing folder', { driveId: ids.nas, mode: 'USE_EXISTING', path: 'lab/nope' }, 400, [{ field: 'storage.path', message: 'folder "lab/nope" does not exist on storage drive "Lab NAS"' }]],
    ['CREATE_NEW under a missing folder', { driveId: ids.nas, mode: 'CREATE_NEW', path: 'nope', name: 'x' }, 400, [{ field: 'storage.path', message: /folder "nope" does not exist/ }]],
    ['CREATE_NEW of a folder that exists', { driveId: ids.nas, mode: 'CREATE_NEW', path: 'lab', name: 'existing' }, 400, [{ field: 'storage.name', message: /already exists.*USE_EXISTING/ }]],
    ['path required off the default drive', { driveId: ids.nas, mode: 'USE_EXISTING' }, 400, [{ field: 'storage.path', message: /is required/ }]],
    ['name only with CREATE_NEW', { driveId: ids.nas, mode: 'USE_EXISTING', path: 'lab/existing', name: 'x' }, 400, [{ field: 'storage.name', message: 'is only allowed with mode CREATE_NEW' }]],
    ['path leaving the drive', { driveId: ids.nas, mode: 'USE_EXISTING', path: 'lab/../..' }, 400, [{ field: 'storage.path', message: /".."/ }]],
    ['name with a slash', { driveId: ids.nas, mode: 'CREATE_NEW', path: 'lab', name: 'a/b' }, 400, [{ field: 'storage.name', message: /single folder name/ }]],
    ['blank name', { driveId: ids.nas, mode: 'CREATE_NEW', path: 'lab', name: ' ' }, 400, [{ field: 'storage.name', message: 'must not be blank' }]],
    // 200 characters, 400 bytes: more than a file system holds in one name (not a drive failure).
    ['a name over 255 bytes', { driveId: ids.nas, mode: 'CREATE_NEW', path: 'lab', name: 'é'.repeat(200) }, 400, [{ field: 'storage.name', message: 'must be at most 255 bytes (UTF-8)' }]],
    ['a path segment over 255 bytes', { driveId: ids.nas, mode: 'USE_EXISTING', path: 'a'.repeat(300) }, 400, [{ field: 'storage.path', message: /folder name over 255 bytes/ }]],
    ['unknown mode', { driveId: ids.nas, mode: 'MOVE', path: 'lab' }, 400, [{ field: 'storage.mode' }]],
    ['mode missing', { driveId: ids.nas, path: 'lab' }, 400, [{ field: 'storage.mode', message: 'is required' }]],
    ['driveId not a UUID', { driveId: 'nas', mode: 'CREATE_NEW', path: 'lab' }, 400, [{ field: 'storage.driveId', message: 'must be a UUID' }]],
    ['USE_EXISTING on a drive that is down', { driveId: ids.unmounted, mode: 'USE_EXISTING', path: 'x' }, 400, [{ field: 'storage.driveId', message: /"Unmounted NAS" is not reachable/ }]],
    ['USE_EXISTING on a drive that does not answer', { driveId: ids.slow, mode: 'USE_EXISTING', path: 'x' }, 400, [{ field: 'storage.driveId', message: /"Slow S3" is not reachable: .*did not answer/ }]],
  ];
  for (const [what, storage, status, errors] of cases) {
    const res = await projects.create(alice, { storage });
    t.equal(res.status, status, `${what}: ${res.text}`);
    t.match(res.body, { statusCode: status, errors }, what);
  }
  for (const [what, driveId] of [['unknown drive', unknown], ["another organization's drive", ids.foreign]]) {
    const res = await projects.create(alice, { storage: { driveId, mode: 'CREATE_NEW', path: 'lab' } });
    t.equal(res.status, 404, what);
    t.match(res.body, { statusCode: 404, message: `Storage drive with id ${driveId} not found` }, what);
  }
  const theirs = await projects.create(outsider, { storage: { driveId: ids.nas, mode: 'USE_EXISTING', path: 'lab/existing' } });
  t.equal(theirs.status, 404, "a drive of the caller's organization only");
  t.equal(await projectCount(), before, 'no project was created');
});

t.test('symlinks that leave the drive are refused', async (t) => {
  await fs.mkdir(path.join(tmp, 'secret'), { recursive: true });
  await fs.symlink(path.join(tmp, 'secret'), path.join(nas, 'escape'));
  const res = await projects.create(alice, { storage: { driveId: ids.nas, mode: 'USE_EXISTING', path: 'escape' } });
  t.equal(res.status, 400);
  t.match(res.body.errors, [{ field: 'storage.path', message: /must stay inside the drive/ }]);
  const created = await projects.create(alice, { storage: { driveId: ids.nas, mode: 'CREATE_NEW', path: 'escape', name: 'x' } });
  t.equal(created.status, 400);
  t.same(await fs.readdir(path.join(tmp, 'secret')), []);
});

t.test('a drive that is down: INITIALIZING, then INITIALIZATION_FAILED after the retries, then recovery on retry', async (t) => {
  const res = await projects.create(alice, { storage: { driveId: ids.unmounted, mode: 'CREATE_NEW', path: 'lab', name: 'later' } });
  t.equal(res.status, 201, 'the request does not wait for the drive');
  t.equal(res.body.status, 'INITIALIZING');
  const id = res.body.id;
  await projects.waitFor(alice, id, 'INITIALIZATION_FAILED');
  const failed = (await activityOf(server, id)).find((e) => e.event_type === 'project.initialization_failed');
  t.match(failed, { category: 'RESEARCH', data: { step: 'storage.create-folder', reason: /storage drive "Unmounted NAS" is not reachable: .*does not exist \(not mounted\?\)/ } });
  const steps = await server.sql<{ status: string; attempts: number }>('select status, attempts from provisioning_step where record_id = ?', [id]);
  t.match(steps, [{ status: 'FAILED', attempts: 6 }], 'first run and five retries');
  t.match(await projects.folders(alice, id), [{ driveId: ids.unmounted, path: 'lab/later', primary: true }], 'the primary folder is known');

  await fs.mkdir(path.join(tmp, 'unmounted', 'lab'), { recursive: true });
  const retried = await server.post(`/api/v1/projects/${id}/retry-initialization`, undefined, { key: alice.key });
  t.equal(retried.status, 200, retried.text);
  t.equal(retried.body.status, 'INITIALIZING');
  await projects.waitFor(alice, id, 'ACTIVE');
  t.ok(await isDir(path.join(tmp, 'unmounted', 'lab', 'later')));
  t.equal((await projects.folders(alice, id)).length, 1, 'still exactly one folder');
});

t.test('the step is idempotent: a folder an earlier run already made is taken as is, never made twice', async (t) => {
  const root = path.join(tmp, 'unmounted');
  const res = await projects.create(alice, { storage: { driveId: ids.unmounted, mode: 'CREATE_NEW', path: 'lab', name: 'again' } });
  t.equal(res.status, 201, res.text);
  await projects.waitFor(alice, res.body.id, 'ACTIVE');
  await fs.writeFile(path.join(root, 'lab', 'again', 'data.csv'), 'kept');
  // Run the step once more, as after a crash between the folder's creation and the step's completion.
  await server.sql(`update provisioning_step set status = 'FAILED' where record_id = ?`, [res.body.id]);
  await server.sql(`update project set status = 'INITIALIZATION_FAILED' where id = ?`, [res.body.id]);
  t.equal((await server.post(`/api/v1/projects/${res.body.id}/retry-initialization`, undefined, { key: alice.key })).status, 200);
  await projects.waitFor(alice, res.body.id, 'ACTIVE');
  t.same(await fs.readdir(path.join(root, 'lab', 'again')), ['data.csv'], 'the existing folder and its content are untouched');
  t.equal((await projects.folders(alice, res.body.id)).length, 1);
});

t.test('a drive that does not answer in time: INITIALIZATION_FAILED naming the timeout', async (t) => {
  const res = await projects.create(alice, { storage: { driveId: ids.slow, mode: 'CREATE_NEW', path: 'lab', name: 'x' } });
  t.equal(res.status, 201, res.text);
  t.equal(res.body.status, 'INITIALIZING');
  await projects.waitFor(alice, res.body.id, 'INITIALIZATION_FAILED');
  t.match((await activityOf(server, res.body.id)).find((e) => e.event_type === 'project.initialization_failed'), {
    data: { reason: /"Slow S3" is not reachable: the S3 endpoint did not answer within 300 ms/ },
  });
});

t.test('an S3 endpoint that goes down and comes back: failed, then ACTIVE after retry, one folder', async (t) => {
  await s3.stop();
  const res = await projects.create(alice, { storage: { driveId: ids.s3, mode: 'CREATE_NEW', path: 'screens', name: 'outage' } });
  t.equal(res.status, 201, res.text);
  await projects.waitFor(alice, res.body.id, 'INITIALIZATION_FAILED');
  t.match((await activityOf(server, res.body.id)).find((e) => e.event_type === 'project.initialization_failed'), { data: { reason: /"Bucket" is not reachable/ } });
  await s3.start();
  t.equal((await server.post(`/api/v1/projects/${res.body.id}/retry-initialization`, undefined, { key: alice.key })).status, 200);
  await projects.waitFor(alice, res.body.id, 'ACTIVE');
  t.ok(await s3Has('lab/screens/outage/'));
  t.equal((await projects.folders(alice, res.body.id)).length, 1);
});

t.test('deleting a project detaches its folders; the folders on the drive stay', async (t) => {
  const res = await projects.create(alice, { storage: { driveId: ids.nas, mode: 'USE_EXISTING', path: 'lab/existing' } });
  t.equal((await server.delete(`/api/v1/projects/${res.body.id}`, { key: alice.key })).status, 204);
  t.same(await server.sql('select id from storage_folder where parent_id = ?', [res.body.id]), []);
  t.ok(await isDir(path.join(nas, 'lab', 'existing')));
});
