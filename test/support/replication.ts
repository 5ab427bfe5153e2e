// A primary, a streaming hot standby and PgBouncer in transaction mode, from Debian's packages
// (postgresql-15, pgbouncer: .ci/run installs them), started the way docs/operations.md
// ("Replicas and poolers") tells an operator to: the standby from `pg_basebackup -R`, PgBouncer
// from the pgbouncer.ini below (a doc test holds the page to it). Everything lives in a
// throw-away directory and stops in the test's teardown.
import { spawn, type ChildProcess } from 'node:child_process';
import { chmod, chown, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { prepareClusterDir } from '../../app/db/postgres-cluster.ts';
import { freePort, startStockCluster, STOCK_USER, type StockCluster } from './stock-postgres.ts';
import type { Teardown } from './db.ts';

/** The pgbouncer.ini of docs/operations.md, "Replicas and poolers" (placeholders in capitals there). */
export function pgbouncerIni(o: { primaryPort: number | string; port: number | string; dir: string }): string {
  return `[databases]
* = host=127.0.0.1 port=${o.primaryPort}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = ${o.port}
unix_socket_dir =
auth_type = scram-sha-256
auth_file = ${o.dir}/userlist.txt
pool_mode = transaction
max_client_conn = 500
default_pool_size = 20
ignore_startup_parameters = extra_float_digits
logfile = ${o.dir}/pgbouncer.log
pidfile = ${o.dir}/pgbouncer.pid
`;
}

/** A work directory the clusters' account can reach (tests run as root; PostgreSQL runs as postgres). */
async function workDir(t: Teardown): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'labdata-replication-'));
  await chmod(dir, 0o711);
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

const stopped = (t: Teardown, cluster: StockCluster) => t.teardown(() => cluster.stop());

/** A primary that streams to standbys (the stock defaults already do: wal_level replica, 10 WAL senders). */
export async function startPrimary(t: Teardown): Promise<StockCluster & { work: string }> {
  const work = await workDir(t);
  const primary = await startStockCluster(join(work, 'primary'), { settings: ['fsync=off'] });
  stopped(t, primary);
  return { ...primary, work };
}

export interface Standby extends StockCluster {
  /** Stops replaying WAL (pg_wal_replay_pause) or resumes it. */
  pause(): Promise<void>;
  resume(): Promise<void>;
  /** Stops the server (fast shutdown); `start()` brings it back on the same port. */
  start(): Promise<void>;
  /** Resolves once the standby has replayed everything the primary has written so far. */
  caughtUp(): Promise<void>;
}

/** A hot standby of `primary`, from `pg_basebackup -R` (the standby signal and primary_conninfo written for it). */
export async function startStandby(t: Teardown, primary: StockCluster & { work: string }): Promise<Standby> {
  const dir = join(primary.work, `standby-${Math.random().toString(36).slice(2, 8)}`);
  await prepareClusterDir(dir, primary.account);
  await run(join(primary.bin.dir, 'pg_basebackup'), ['-h', '127.0.0.1', '-p', String(primary.port), '-U', STOCK_USER, '-D', dir, '-R', '-X', 'stream', '-c', 'fast'], primary, { PGPASSWORD: primary.password });
  let cluster = await startStockCluster(dir, { existing: true, password: primary.password, settings: ['fsync=off'] });
  let port = cluster.port;
  t.teardown(() => cluster.stop());
  const sql = async (text: string) => {
    const client = new pg.Client({ connectionString: cluster.url() });
    await client.connect();
    try {
      return (await client.query(text)).rows;
    } finally {
      await client.end();
    }
  };
  const standby: Standby = {
    ...cluster,
    url: (db) => cluster.url(db),
    stop: async () => cluster.stop(),
    pause: async () => void (await sql('select pg_wal_replay_pause()')),
    resume: async () => void (await sql('select pg_wal_replay_resume()')),
    start: async () => {
      cluster = await startStockCluster(dir, { existing: true, password: primary.password, settings: ['fsync=off'], port });
      port = cluster.port;
    },
    caughtUp: async () => {
      const [{ lsn }] = await sqlOn(primary.url(), 'select pg_current_wal_lsn()::text as lsn');
      for (let i = 0; i < 200; i++) {
        const [{ behind }] = await sql(`select pg_last_wal_replay_lsn() < '${lsn}'::pg_lsn as behind`);
        if (!behind) return;
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error('the standby did not catch up within 10 s');
    },
  };
  return standby;
}

/** PgBouncer in transaction mode in front of `primary`; `url(db)` connects through it. */
export async function startPgbouncer(t: Teardown, primary: StockCluster & { work: string }): Promise<{ port: number; url(db?: string): string }> {
  const binary = ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer'].find((p) => existsSync(p));
  if (!binary) throw new Error('pgbouncer is not installed: apt-get install pgbouncer (bash .ci/run does)');
  const dir = join(primary.work, 'pgbouncer');
  await prepareClusterDir(dir, primary.account);
  const port = await freePort();
  const ini = join(dir, 'pgbouncer.ini');
  await writeFile(ini, pgbouncerIni({ primaryPort: primary.port, port, dir }));
  await writeFile(join(dir, 'userlist.txt'), `"${STOCK_USER}" "${primary.password}"\n`, { mode: 0o600 });
  if (primary.account) for (const f of [ini, join(dir, 'userlist.txt')]) await chown(f, primary.account.uid, primary.account.gid);
  // PgBouncer refuses to run as root: it runs as the clusters' account.
  const child = spawn(binary, [ini], { ...(primary.account ? { uid: primary.account.uid, gid: primary.account.gid } : {}), stdio: 'ignore' });
  t.teardown(() => stopChild(child));
  const url = (db = 'postgres') => `postgresql://${STOCK_USER}:${primary.password}@127.0.0.1:${port}/${db}`;
  for (let i = 0; ; i++) {
    try {
      await sqlOn(url(), 'select 1');
      break;
    } catch (err) {
      if (i > 100 || child.exitCode !== null) throw new Error(`pgbouncer did not start: ${(err as Error).message}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return { port, url };
}

/** Creates a database on the primary (a test's own), as `labdata` would on first start. */
export async function createDatabase(primary: StockCluster, name: string): Promise<void> {
  await sqlOn(primary.url(), `create database ${pg.escapeIdentifier(name)}`);
}

export async function sqlOn(url: string, text: string, values: unknown[] = []): Promise<Record<string, any>[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(text, values)).rows;
  } finally {
    await client.end();
  }
}

function run(command: string, args: string[], cluster: StockCluster, env: Record<string, string>): Promise<void> {
  return new Promise((resolve, reject) => {
    const ids = cluster.account ? { uid: cluster.account.uid, gid: cluster.account.gid } : {};
    const child = spawn(command, args, { ...ids, env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr!.on('data', (c) => (err += c));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`${command} failed (${code}): ${err.trim()}`))));
  });
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}
