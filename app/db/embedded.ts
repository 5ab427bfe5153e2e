import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import pg from 'pg';
import { ensureDataDir } from '../startup.ts';
import { binariesFor, clusterAccount, clusterDirectory, initCluster, prepareClusterDir, startCluster, type ClusterProcess } from './postgres-cluster.ts';

/** A database the process can use; `stop` only stops what this process started. */
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

/** A secret kept in a file only its owner can read (0600, created exclusively, mode repaired). */
async function readOrCreate(file: string, make: () => string): Promise<string> {
  try {
    const value = (await fs.readFile(file, 'utf8')).trim();
    await fs.chmod(file, 0o600).catch(() => undefined);
    return value;
  } catch {
    const value = make();
    await fs.writeFile(file, value + '\n', { mode: 0o600, flag: 'wx' });
    return value;
  }
}

/** The port of a postmaster already running on this data directory (server and CLI share it). */
async function runningPort(pgDir: string): Promise<number | undefined> {
  let lines: string[];
  try {
    lines = (await fs.readFile(path.join(pgDir, 'postmaster.pid'), 'utf8')).split('\n');
  } catch {
    return undefined;
  }
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  try {
    process.kill(pid, 0);
  } catch {
    return undefined;
  }
  return Number.isInteger(port) ? port : undefined;
}

async function ensureDatabase(adminUrl: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const { rowCount } = await client.query('select 1 from pg_database where datname = $1', [DB_NAME]);
    if (!rowCount) await client.query(`create database ${DB_NAME}`);
  } finally {
    await client.end();
  }
}

/**
 * Starts (or joins) the embedded PostgreSQL kept under `<dataDir>/pg`, so `npm start` needs
 * nothing installed. A cluster already running on that directory (the server, while the CLI
 * runs) is reused and left running.
 */
export async function startEmbeddedDatabase(dataDir: string, log: (msg: string) => void): Promise<DatabaseHandle> {
  await ensureDataDir(dataDir);
  const password = await readOrCreate(path.join(dataDir, 'pg-password'), () => crypto.randomBytes(18).toString('base64url'));
  const urlFor = (port: number, db: string) => `postgresql://${DB_USER}:${encodeURIComponent(password)}@127.0.0.1:${port}/${db}`;
  // As root, PostgreSQL runs as the `postgres` account: its files and binaries must be reachable by it.
  const account = await clusterAccount();
  const pgDir = await clusterDirectory(path.join(dataDir, 'pg'), account, log);

  const existing = await runningPort(pgDir);
  if (existing) {
    log(`using the embedded PostgreSQL already running on port ${existing}`);
    await ensureDatabase(urlFor(existing, 'postgres'));
    return { url: urlFor(existing, DB_NAME), stop: async () => {} };
  }

  const bin = await binariesFor(account, log);
  const initialised = await fs.stat(path.join(pgDir, 'PG_VERSION')).then(() => true, () => false);
  if (!initialised) {
    log('initialising the embedded PostgreSQL cluster');
    await prepareClusterDir(pgDir, account);
    await initCluster(bin, pgDir, DB_USER, password, account);
  }
  // The port is probed free, then bound by postgres: another process may take it in between.
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    let cluster: ClusterProcess;
    try {
      cluster = await startCluster(bin, pgDir, port, account);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE' && attempt < 3) continue;
      throw err;
    }
    try {
      await ensureDatabase(urlFor(port, 'postgres'));
    } catch (err) {
      await cluster.stop();
      throw err;
    }
    log(`embedded PostgreSQL started on port ${port}`);
    return { url: urlFor(port, DB_NAME), stop: () => cluster.stop() };
  }
}
