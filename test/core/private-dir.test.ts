import t from 'tap';
import { cpSync, lstatSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, watch } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import pg from 'pg';
import { dataDir, get, isRunning, postmasterPid, serve, stop, stopLeftCluster } from '../support/serve-process.ts';

// Issue 11, points 7 and 8: `npm start` as root from a private directory (a clone in /root/work,
// mode 0700) works, and no secret is readable by other local users, in any file, at any time.

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
  for (const name of readdirSync(tmp)) {
    // Directories (Node's compile cache) hold compiled code; the files are what could leak.
    if (!statSync(join(tmp, name)).isFile()) continue;
    t.notOk(readFileSync(join(tmp, name), 'utf8').includes(password), `${name} does not hold the password`);
  }
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

t.test('a private data dir removed and made again at the same path gets a working cluster of its own', async (t) => {
  // `rm -rf .data` to start afresh: as root the old cluster lives on elsewhere (it was relocated),
  // with the removed data dir's password; the new data dir must not be handed that one.
  const { startEmbeddedDatabase } = await import('../../app/db/embedded.ts');
  const dir = join(dataDir(t, 0o700), '.data');
  const use = async () => {
    const db = await startEmbeddedDatabase(dir, () => {});
    try {
      const client = new pg.Client({ connectionString: db.url });
      await client.connect();
      await client.end();
    } finally {
      await db.stop();
    }
    return lstatSync(join(dir, 'pg')).isSymbolicLink() ? readlinkSync(join(dir, 'pg')) : undefined;
  };
  const first = await use();
  t.teardown(() => first && rmSync(dirname(first), { recursive: true, force: true }));
  rmSync(dir, { recursive: true, force: true });
  // Two processes at once: as root both relocate, and the second to link finds the first's link.
  const [second, alongside] = await Promise.all([use(), use()]);
  t.teardown(() => removeRelocatedCluster(dir));
  t.equal(alongside, second, 'both use the same cluster');
  if (process.getuid?.() === 0) t.not(second, first, 'as root: a cluster of its own, elsewhere');
  else t.equal(second, undefined, 'not root: in the data dir itself');
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
  const { binariesFor, clusterAccount, packagedBinaries, reachable } = await import('../../app/db/postgres-cluster.ts');
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
