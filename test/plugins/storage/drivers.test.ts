import t from 'tap';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { LocalDriver } from '../../../plugins/storage/drivers/local.ts';
import { S3Driver } from '../../../plugins/storage/drivers/s3.ts';
import { folderNameFor, normalizePath } from '../../../plugins/storage/paths.ts';
import { startLocalS3, startSilentEndpoint } from '../../support/stubs/s3.ts';

// The drivers behind the storage plugin, each against the real thing: a directory tree for
// LOCAL, a local S3-compatible server (s3rver) through the AWS SDK for S3.
const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'labdata-drivers-'));
t.teardown(() => fs.rm(tmp, { recursive: true, force: true }));

t.test('paths: relative to the drive root; "", ".", ".." and control characters refused', async (t) => {
  t.equal(normalizePath('/lab/2024/'), 'lab/2024');
  t.equal(normalizePath('lab'), 'lab');
  t.equal(normalizePath('/'), '');
  t.equal(normalizePath(''), '');
  for (const bad of ['a//b', '../x', 'a/../b', 'a/./b', 'a/\u0000b', 'a\\b', 'a/ /b']) {
    t.throws(() => normalizePath(bad), { name: 'PathSyntaxError' }, bad);
  }
  t.equal(folderNameFor('P-1 / Alpha', '0123abcd-0000-4000-8000-000000000000'), 'P-1-Alpha-0123abcd');
  t.equal(folderNameFor('..', '0123abcd-0000-4000-8000-000000000000'), 'project-0123abcd');
});

t.test('LOCAL: createFolder is idempotent, describe gives folder metadata, files are not folders', async (t) => {
  const root = path.join(tmp, 'nas');
  await fs.mkdir(path.join(root, 'lab'), { recursive: true });
  await fs.writeFile(path.join(root, 'lab', 'notes.txt'), 'x');
  const d = new LocalDriver({ rootPath: root, timeoutMs: 2000 });
  t.equal(await d.folderExists(''), true, 'the root');
  t.equal(await d.folderExists('lab'), true);
  t.equal(await d.folderExists('missing'), false);
  t.equal(await d.folderExists('lab/notes.txt'), false, 'a file is not a folder');
  const created = await d.createFolder('lab', 'run-1');
  t.match(created, { path: 'lab/run-1', name: 'run-1', modifiedAt: /^\d{4}-\d\d-\d\dT/ });
  t.same(await d.createFolder('lab', 'run-1'), created, 'a second create returns the same folder');
  t.ok((await fs.stat(path.join(root, 'lab', 'run-1'))).isDirectory());
  await t.rejects(d.createFolder('nope', 'x'), { name: 'FolderMissingError' }, 'the parent must exist');
  await t.rejects(d.createFolder('lab', 'notes.txt'), { name: 'NotAFolderError' }, 'a file has the name');
  t.match(await d.describe('lab'), { path: 'lab', name: 'lab' });
  t.equal(await d.describe('missing'), null);
});

t.test('LOCAL: symlinks leading outside the root are refused; inside the root they are followed', async (t) => {
  const root = path.join(tmp, 'sym');
  const outside = path.join(tmp, 'outside');
  await fs.mkdir(path.join(root, 'real'), { recursive: true });
  await fs.mkdir(outside, { recursive: true });
  await fs.symlink(outside, path.join(root, 'escape'));
  await fs.symlink(path.join(root, 'real'), path.join(root, 'alias'));
  const d = new LocalDriver({ rootPath: root, timeoutMs: 2000 });
  await t.rejects(d.folderExists('escape'), { name: 'PathOutsideDriveError' });
  await t.rejects(d.createFolder('escape', 'x'), { name: 'PathOutsideDriveError' });
  t.same(await fs.readdir(outside), [], 'nothing was created outside');
  t.equal(await d.folderExists('alias'), true);
  t.throws(() => new LocalDriver({ rootPath: 'relative/root', timeoutMs: 1000 }), /absolute/);
});

t.test('LOCAL: a missing root is an unavailable drive (unmounted NAS), unless it is the managed default', async (t) => {
  const gone = new LocalDriver({ rootPath: path.join(tmp, 'unmounted'), timeoutMs: 2000 });
  await t.rejects(gone.folderExists(''), { name: 'DriveUnavailableError' });
  await t.rejects(gone.createFolder('', 'x'), { name: 'DriveUnavailableError' });
  const dataDir = path.join(tmp, 'data');
  const managedRoot = path.join(dataDir, 'storage', 'org-1');
  const managed = new LocalDriver({ rootPath: managedRoot, timeoutMs: 2000, createRootUnder: dataDir });
  await t.rejects(managed.folderExists(''), { name: 'DriveUnavailableError' }, 'no data dir: not created');
  await fs.mkdir(dataDir);
  t.equal(await managed.folderExists(''), true, 'created under the existing data dir');
  t.match(await managed.createFolder('', 'projects'), { path: 'projects' });
});

t.test('S3 against a local S3-compatible server: folders are prefixes with a zero-byte marker', async (t) => {
  const s3 = await startLocalS3(t);
  const settings = { endpoint: s3.endpoint, region: 'us-east-1', bucket: s3.bucket, prefix: 'lab/', forcePathStyle: true };
  const d = new S3Driver(settings, s3.credentials, 5000);
  t.teardown(() => d.close());
  t.equal(await d.folderExists(''), false, 'the prefix holds nothing yet');
  await t.rejects(d.createFolder('', 'x'), { name: 'FolderMissingError' });
  const root = new S3Driver({ ...settings, prefix: '' }, s3.credentials, 5000);
  t.teardown(() => root.close());
  t.equal(await root.folderExists(''), true, 'the bucket root exists');
  t.match(await root.createFolder('', 'lab'), { path: 'lab', name: 'lab' });
  t.equal(await d.folderExists(''), true, 'the prefix is there now');
  const created = await d.createFolder('', 'projects');
  t.match(created, { path: 'projects', name: 'projects', modifiedAt: /^\d{4}-/ });
  await d.createFolder('', 'projects');
  t.match(await d.createFolder('projects', 'P-1'), { path: 'projects/P-1', name: 'P-1' });
  t.equal(await d.folderExists('projects/P-1'), true);
  t.equal(await d.folderExists('projects/P-2'), false);
  t.equal(await d.folderExists('proj'), false, 'a key prefix that is not a whole segment is no folder');

  const client = new S3Client({ endpoint: s3.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: s3.credentials });
  t.teardown(() => client.destroy());
  const keys = (await client.send(new ListObjectsV2Command({ Bucket: s3.bucket }))).Contents?.map((c) => [c.Key, c.Size]);
  t.same(keys, [['lab/', 0], ['lab/projects/', 0], ['lab/projects/P-1/', 0]], 'one marker per folder, created twice = once');
});

t.test('S3: refused credentials, a stopped server and a server that never answers are an unavailable drive', async (t) => {
  const s3 = await startLocalS3(t);
  const settings = { endpoint: s3.endpoint, region: 'us-east-1', bucket: s3.bucket, forcePathStyle: true };
  const bad = new S3Driver(settings, { accessKeyId: 'nope', secretAccessKey: 'wrong' }, 5000);
  t.teardown(() => bad.close());
  await t.rejects(bad.folderExists('x'), { name: 'DriveUnavailableError', message: /refused the credentials/ });
  await t.rejects(bad.folderExists('x'), { name: 'DriveUnavailableError' });
  const noBucket = new S3Driver({ ...settings, bucket: 'no-such-bucket' }, s3.credentials, 5000);
  t.teardown(() => noBucket.close());
  await t.rejects(noBucket.folderExists('x'), /bucket does not exist/);

  await s3.stop();
  const down = new S3Driver(settings, s3.credentials, 5000);
  t.teardown(() => down.close());
  await t.rejects(down.folderExists('x'), /unreachable/);
  await s3.start();
  t.equal(await down.folderExists(''), true, 'back up on the same port');

  const silent = new S3Driver({ ...settings, endpoint: await startSilentEndpoint(t) }, s3.credentials, 300);
  t.teardown(() => silent.close());
  await t.rejects(silent.folderExists('x'), /did not answer within 300 ms/);
});
