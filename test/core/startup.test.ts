import t from 'tap';
import { cpSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, watch, writeFileSync, lstatSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createTestDatabase } from '../support/db.ts';
import { dataDir, get, isRunning, postmasterPid, serve, spawnServe, stop, stopLeftCluster, type Tap } from '../support/serve-process.ts';

// Every start-up failure an operator can cause ends in one line naming the cause and the
// setting to change (names from the operator contract), exit 1, never a stack trace.

const testCert = process.env.LABDATA_TEST_TLS_CERT!;
const testKey = process.env.LABDATA_TEST_TLS_KEY!;

async function failedStart(t: Tap & { equal: Function; match: Function; notMatch: Function; ok: Function }, env: Record<string, string>, setting: RegExp) {
  const run = spawnServe(t, env);
  const { code } = await run.exited;
  const stderr = run.stderr();
  t.equal(code, 1, 'exit 1');
  const lines = stderr.split('\n').filter(Boolean);
  const reasons = lines.filter((l) => !l.startsWith('{'));
  t.equal(reasons.length, 1, `one line besides JSON logs:\n${stderr}`);
  t.match(reasons[0] ?? '', /^labdata: /);
  t.match(reasons[0] ?? '', setting, 'names the setting to change');
  t.notMatch(stderr, /^\s+at /m, 'no stack trace');
  t.equal(run.stdout(), '', 'no ready line');
  return reasons[0] ?? '';
}

t.test('port already taken: names LABDATA_PORT', async (t) => {
  const blocker = net.createServer();
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
  t.teardown(() => blocker.close());
  const port = (blocker.address() as net.AddressInfo).port;
  const line = await failedStart(t, {
    LABDATA_DATABASE_URL: await createTestDatabase(t),
    LABDATA_DATA_DIR: dataDir(t),
    LABDATA_TLS_CERT: testCert,
    LABDATA_TLS_KEY: testKey,
    LABDATA_PLUGINS: 'users',
    LABDATA_PORT: String(port),
  }, /LABDATA_PORT/);
  t.match(line, `port ${port}`);
  t.match(line, /already in use/);
});

t.test('bad certificate or key files: names LABDATA_TLS_CERT / LABDATA_TLS_KEY', async (t) => {
  const dir = dataDir(t);
  const garbage = join(dir, 'garbage.pem');
  writeFileSync(garbage, 'not a certificate\n');
  const base = { LABDATA_DATABASE_URL: 'postgresql://nobody@127.0.0.1:1/none', LABDATA_DATA_DIR: dir, LABDATA_PLUGINS: 'users' };
  t.match(await failedStart(t, { ...base, LABDATA_TLS_CERT: garbage, LABDATA_TLS_KEY: testKey }, /LABDATA_TLS_CERT/), /not a PEM certificate/);
  t.match(await failedStart(t, { ...base, LABDATA_TLS_CERT: testCert, LABDATA_TLS_KEY: join(dir, 'missing.pem') }, /LABDATA_TLS_KEY/), /ENOENT/);
});

t.test('database unreachable: names LABDATA_DATABASE_URL, never its password', async (t) => {
  const closed = net.createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const port = (closed.address() as net.AddressInfo).port;
  await new Promise((resolve) => closed.close(resolve));
  const line = await failedStart(t, {
    LABDATA_DATABASE_URL: `postgresql://someone:pw-not-to-print@127.0.0.1:${port}/labdata`,
    LABDATA_DATA_DIR: dataDir(t),
    LABDATA_TLS_CERT: testCert,
    LABDATA_TLS_KEY: testKey,
    LABDATA_PLUGINS: 'users',
  }, /LABDATA_DATABASE_URL/);
  t.match(line, `127.0.0.1:${port}/labdata`);
  t.match(line, /ECONNREFUSED/);
  t.notMatch(line, /pw-not-to-print/);
});

t.test('unwritable data directory: names LABDATA_DATA_DIR', async (t) => {
  const dir = dataDir(t);
  const file = join(dir, 'a-file');
  writeFileSync(file, '');
  // Root may write anywhere it has a directory; a path through a regular file is unwritable for all.
  const line = await failedStart(t, { LABDATA_DATA_DIR: join(file, 'data'), LABDATA_PLUGINS: 'users' }, /LABDATA_DATA_DIR/);
  t.match(line, join(file, 'data'));
});

t.test('start as root from a private (0700) directory: works, and no secret is readable by others at any time', async (t) => {
  const home = dataDir(t, 0o700); // e.g. a clone in /root/work
  const dir = join(home, 'work', '.data');
  stopLeftCluster(t, dir);
  t.teardown(() => removeRelocatedCluster(dir));
  // A private TMPDIR, watched for every file created in it while the server starts.
  const tmp = mkdtempSync(join(tmpdir(), 'labdata-tmp-'));
  t.teardown(() => rmSync(tmp, { recursive: true, force: true }));
  const created: string[] = [];
  const watcher = watch(tmp, (_event, name) => name && created.push(String(name)));
  t.teardown(() => watcher.close());

  const served = await serve(t, { LABDATA_DATA_DIR: dir, LABDATA_PLUGINS: 'users,projects', TMPDIR: tmp });
  const key = /API key \(shown once, keep it\): (\S+)\n/.exec(served.stdout())![1];
  const ca = readFileSync(join(dir, 'tls', 'cert.pem'), 'utf8');
  t.equal((await get(`${served.url}/api/v1/projects`, { ca, key })).status, 200, 'serves with its embedded database');
  t.ok(isRunning(postmasterPid(dir)));

  const password = readFileSync(join(dir, 'pg-password'), 'utf8').trim();
  t.same(created.filter((name) => /pass|pw/i.test(name)), [], 'no password file in TMPDIR, not even for a moment');
  for (const name of readdirSync(tmp)) t.notOk(readFileSync(join(tmp, name), 'utf8').includes(password), `${name} does not hold the password`);
  // Every secret in the data dir is private to its owner; only the certificate is public.
  const open = [dir, ...walk(dir)]
    .filter((file) => !file.endsWith(join('tls', 'cert.pem')))
    .map((file) => ({ file, mode: statSync(file).mode & 0o777 }))
    .filter(({ mode }) => mode & 0o077);
  t.same(open, [], 'nothing in the data dir (database files included) is open to group or others');
  t.equal(statSync(join(dir, 'pg-password')).mode & 0o777, 0o600);
  if (process.getuid?.() === 0) {
    // PostgreSQL runs as `postgres`, which cannot enter a 0700 directory of root's.
    t.ok(lstatSync(join(dir, 'pg')).isSymbolicLink(), 'as root, the cluster lives where its account can reach it, linked from the data dir');
  }
  t.same(await stop(served), { code: 0, signal: null });
});

/** Files and directories under `dir` (following the cluster link: its files count too). */
function walk(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    out.push(path);
    if (entry.isDirectory() || (entry.isSymbolicLink() && statSync(path).isDirectory())) out.push(...walk(path));
  }
  return out;
}

/** As root, the cluster of a private data dir lives elsewhere, linked from `<dir>/pg`. */
function removeRelocatedCluster(dir: string) {
  const link = join(dir, 'pg');
  try {
    if (lstatSync(link).isSymbolicLink()) rmSync(dirname(readlinkSync(link)), { recursive: true, force: true });
  } catch {
    // nothing was relocated
  }
}

t.test('binaries the PostgreSQL account cannot reach (node_modules in a private directory) are used from a reachable copy', async (t) => {
  const { binariesFor, clusterAccount, packagedBinaries, reachable } = await import('../../core/db/postgres-cluster.ts');
  const packaged = await packagedBinaries();
  const nativeDir = dirname(dirname(packaged.postgres));
  const home = dataDir(t, 0o700);
  cpSync(nativeDir, join(home, 'native'), { recursive: true, verbatimSymlinks: true });
  const hidden = { initdb: join(home, 'native', 'bin', 'initdb'), postgres: join(home, 'native', 'bin', 'postgres') };
  const account = await clusterAccount();
  const bin = await binariesFor(account, () => {}, hidden);
  if (!account) {
    t.same(bin, hidden, 'not root: PostgreSQL runs as this user, the binaries stay where they are');
    return;
  }
  t.teardown(() => rmSync(dirname(dirname(bin.postgres)), { recursive: true, force: true }));
  t.notOk(reachable(hidden.postgres, account), 'the packaged binaries are out of reach');
  t.ok(reachable(bin.postgres, account), 'the copy is reachable');
  const version = spawnSync(bin.postgres, ['--version'], { uid: account.uid, gid: account.gid, encoding: 'utf8' });
  t.equal(version.status, 0, version.stderr);
  t.match(version.stdout, /PostgreSQL/);
});
