import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import pg from 'pg';
import { StartupError, ensureDataDir } from '../startup.ts';
import { isConnectionFailure, sqlStateOf } from '../../core/db/errors.ts';
import { createDatabaseIfMissing, quietClient } from './create-database.ts';
import { binariesFor, clusterAccount, clusterDirectory, initCluster, isAlive, prepareClusterDir, startCluster, stopPostmaster, type Account, type ClusterProcess } from './postgres-cluster.ts';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const once = (fn: () => Promise<void>) => {
  let done: Promise<void> | undefined;
  return () => (done ??= fn());
};

/**
 * A database the process can use. `stop` lets go of it: an embedded cluster stops when the last
 * process using it lets go (a second call does nothing more).
 */
export interface DatabaseHandle {
  url: string;
  stop(): Promise<void>;
}

const DB_NAME = 'labdata';
const DB_USER = 'labdata';

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/**
 * A secret kept in a file only its owner can read (0600, created exclusively, mode repaired).
 * Processes starting together on a fresh data dir agree on the one the first of them wrote.
 */
async function readOrCreate(file: string, make: () => string): Promise<string> {
  for (let attempt = 1; ; attempt++) {
    const existing = await fs.readFile(file, 'utf8').then((text) => text.trim(), () => undefined);
    if (existing) {
      await fs.chmod(file, 0o600).catch(() => undefined);
      return existing;
    }
    if (existing === undefined) {
      const value = make();
      try {
        await fs.writeFile(file, value + '\n', { mode: 0o600, flag: 'wx' });
        return value;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
    }
    // Another process created it this instant and is writing it: read it once written.
    if (attempt >= 50) throw new StartupError(`${file} stays empty: remove it (a new one is made)`);
    await sleep(20);
  }
}

/** The postmaster already running on this data directory (server and CLI share it), if any. */
async function runningPostmaster(pgDir: string): Promise<{ pid: number; port: number } | undefined> {
  let lines: string[];
  try {
    lines = (await fs.readFile(path.join(pgDir, 'postmaster.pid'), 'utf8')).split('\n');
  } catch {
    return undefined;
  }
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!isAlive(pid)) return undefined;
  return Number.isInteger(port) ? { pid, port } : undefined;
}

/**
 * Every process using the embedded cluster (the server, each admin command) holds this session
 * lock shared, on a connection of its own, for as long as it does: the last one out takes it
 * exclusively (no one can join meanwhile) and stops the cluster, whoever started it.
 */
const USERS_LOCK = `hashtext('labdata embedded cluster users')`;
/** How long a server that started the cluster waits on its way out for commands still using it. */
const WAIT_FOR_USERS_MS = 10_000;

/** This process's share of the cluster on `port`, its database made first if need be. */
async function shareOf(port: number, urlFor: (port: number, db: string) => string): Promise<pg.Client> {
  await createDatabaseIfMissing(urlFor(port, DB_NAME));
  return takeShare(urlFor(port, DB_NAME));
}

async function takeShare(url: string): Promise<pg.Client> {
  // The cluster stopping under an idle share is expected: there is nothing left to release.
  const client = quietClient(url);
  try {
    await client.connect();
    await client.query(`select pg_advisory_lock_shared(${USERS_LOCK})`);
    return client;
  } catch (err) {
    await client.end().catch(() => undefined);
    throw err;
  }
}

/**
 * Gives the share back. True when this process is the last user (it then holds the lock
 * exclusively until the cluster stops), or when the cluster is gone anyway. With `wait`, others
 * still using it get `wait.ms` to leave (`wait.notice` is told first).
 */
async function lastOut(share: pg.Client, wait?: { ms: number; notice: () => void }): Promise<boolean> {
  try {
    await share.query(`select pg_advisory_unlock_shared(${USERS_LOCK})`);
    const { rows } = await share.query<{ last: boolean }>(`select pg_try_advisory_lock(${USERS_LOCK}) as last`);
    if (rows[0].last || !wait) return rows[0].last;
    wait.notice();
    await share.query(`set lock_timeout = ${wait.ms}`);
    await share.query(`select pg_advisory_lock(${USERS_LOCK})`);
    return true;
  } catch (err) {
    return sqlStateOf(err) !== '55P03'; // lock_not_available: others stayed
  }
}

/**
 * What this process must do to let go of the embedded cluster if it is stopped right now (a
 * command's signal handler, app/cli/cli.ts): nothing yet, then stopping the cluster it has just
 * started, then giving its share back.
 */
let letGo: () => Promise<void> = async () => {};
export function letGoOfEmbeddedDatabase(): Promise<void> {
  return letGo();
}

const initialised = (pgDir: string) => fs.stat(path.join(pgDir, 'PG_VERSION')).then(() => true, () => false);
const INIT_FIX = 'stop the other labdata process using this LABDATA_DATA_DIR, or remove <dataDir>/pg.init.lock if none runs';

/**
 * Runs `init` (initdb) unless another process is at it: one at a time per data dir, through a
 * lock file holding the initialising process's pid (a dead holder's lock is taken over). False
 * when another process holds it.
 */
async function initialiseOnce(dataDir: string, pgDir: string, init: () => Promise<void>, account: Account | undefined, log: (msg: string) => void): Promise<boolean> {
  const lockFile = path.join(dataDir, 'pg.init.lock');
  let lock: fs.FileHandle;
  try {
    lock = await fs.open(lockFile, 'wx', 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    const holder = Number(await fs.readFile(lockFile, 'utf8').catch(() => ''));
    // Being written this instant (no pid yet), or held by a live process: wait. Dead: take over.
    if (!holder || isAlive(holder)) return false;
    await fs.rm(lockFile, { force: true });
    return initialiseOnce(dataDir, pgDir, init, account, log);
  }
  try {
    await lock.writeFile(String(process.pid));
    if (!(await initialised(pgDir))) {
      log('initialising the embedded PostgreSQL cluster');
      await prepareClusterDir(pgDir, account);
      await init();
    }
    return true;
  } finally {
    await lock.close();
    await fs.rm(lockFile, { force: true });
  }
}

export interface EmbeddedOptions {
  /**
   * The server: a cluster it starts lives exactly as long as it does (even a kill -9 takes the
   * cluster along), and on its way out it waits a little for admin commands still using it.
   * Otherwise (an admin command) a cluster it starts stays up for whoever joined it meanwhile.
   */
  server?: boolean;
}

/**
 * Starts (or joins) the embedded PostgreSQL kept under `<dataDir>/pg`, so `npm start` needs
 * nothing installed. Processes sharing it (the server, admin commands) may come and go in any
 * order: the last one out stops it (USERS_LOCK).
 */
export async function startEmbeddedDatabase(dataDir: string, log: (msg: string) => void, options: EmbeddedOptions = {}): Promise<DatabaseHandle> {
  await ensureDataDir(dataDir);
  const password = await readOrCreate(path.join(dataDir, 'pg-password'), () => crypto.randomBytes(18).toString('base64url'));
  const urlFor = (port: number, db: string) => `postgresql://${DB_USER}:${encodeURIComponent(password)}@127.0.0.1:${port}/${db}`;
  // As root, PostgreSQL runs as the `postgres` account: its files and binaries must be reachable by it.
  const account = await clusterAccount();
  const pgDir = await clusterDirectory(path.join(dataDir, 'pg'), password, account, log);
  const bin = await binariesFor(account, log);

  const deadline = Date.now() + 30_000;
  for (;;) {
    const running = await runningPostmaster(pgDir);
    if (running) {
      let share: pg.Client;
      try {
        share = await shareOf(running.port, urlFor);
      } catch (err) {
        // Still starting (another process started it a moment ago), or stopping (its last user
        // left just as this one came): join it once up, or start it again once gone.
        if (Date.now() > deadline) throw err;
        await sleep(100);
        continue;
      }
      log(`using the embedded PostgreSQL already running on port ${running.port}`);
      const stop = once(async () => {
        if (await lastOut(share)) await stopPostmaster(running.pid);
        await share.end().catch(() => undefined);
      });
      letGo = stop;
      return { url: urlFor(running.port, DB_NAME), stop };
    }

    // Through the init lock even when PG_VERSION is there: initdb writes it first and pg_control last.
    if (!(await initialiseOnce(dataDir, pgDir, () => initCluster(bin, pgDir, DB_USER, password, account), account, log))) {
      // Another process is initialising it: wait for it, then join or start it.
      if (Date.now() > deadline) throw new StartupError(`another process has been initialising the embedded PostgreSQL in ${pgDir} for too long: ${INIT_FIX}`);
      await sleep(200);
      continue;
    }
    // The port is probed free, then bound by postgres: another process may take it in between,
    // or start a postmaster on this directory first (EEXIST: join that one once it is up).
    const port = await freePort();
    let cluster: ClusterProcess;
    try {
      cluster = await startCluster(bin, pgDir, port, account, [], !options.server);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if ((code === 'EADDRINUSE' || code === 'EEXIST') && Date.now() < deadline) {
        await sleep(100);
        continue;
      }
      throw err;
    }
    letGo = () => cluster.stop();
    let share: pg.Client;
    try {
      share = await shareOf(port, urlFor);
    } catch (err) {
      await cluster.stop();
      // A process that joined and left before this one had its share found itself the last user
      // and stopped the cluster under it: start it again.
      if (isConnectionFailure(err) && Date.now() < deadline) continue;
      throw err;
    }
    log(`embedded PostgreSQL started on port ${port}`);
    const stop = once(async () => {
      if (options.server) {
        // It stops with this process whatever happens (setpriv --pdeathsig): give admin commands
        // still using it a moment to finish.
        await lastOut(share, { ms: WAIT_FOR_USERS_MS, notice: () => log('waiting for the admin commands still using the embedded PostgreSQL') });
        await cluster.stop();
      } else if (await lastOut(share)) {
        await cluster.stop();
      } else {
        log('leaving the embedded PostgreSQL running for the processes still using it');
      }
      await share.end().catch(() => undefined);
    });
    letGo = stop;
    return { url: urlFor(port, DB_NAME), stop };
  }
}
