// PostgreSQL as operators run it: Debian's packages (`postgresql-15`, installed by .ci/run when
// missing), started from their binaries with the package's default settings (JIT on, fsync on,
// 128 MB of shared buffers), in a throw-away directory. `npm test -- --stock` runs the whole
// suite on such a server (test/support/run.ts); the replica and pooler tests start their own.
// The clusters run as this process's account, or as `postgres` when it is root (PostgreSQL
// refuses root), through the same helpers as the embedded database (app/db/postgres-cluster.ts).
import { existsSync, readdirSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { binariesFor, clusterAccount, initCluster, prepareClusterDir, startCluster, type Account, type Binaries } from '../../app/db/postgres-cluster.ts';

const DEBIAN = '/usr/lib/postgresql';
export const STOCK_USER = 'labdata';

/**
 * The directory of the stock server's binaries: LABDATA_TEST_PG_BIN, else Debian's PostgreSQL 15,
 * else the newest version Debian's packages installed. Missing: one line saying what to install.
 */
export function stockBinDir(): string {
  const given = process.env.LABDATA_TEST_PG_BIN;
  if (given) {
    if (!existsSync(join(given, 'postgres'))) throw new Error(`LABDATA_TEST_PG_BIN=${given} holds no postgres binary`);
    return given;
  }
  const versions = existsSync(DEBIAN) ? readdirSync(DEBIAN).filter((v) => existsSync(join(DEBIAN, v, 'bin', 'postgres'))) : [];
  const version = versions.includes('15') ? '15' : versions.sort((a, b) => Number(b) - Number(a))[0];
  if (!version) {
    throw new Error('no stock PostgreSQL server found: install Debian\'s postgresql-15 (apt-get install postgresql-15; bash .ci/run does), or set LABDATA_TEST_PG_BIN to a PostgreSQL bin directory');
  }
  return join(DEBIAN, version, 'bin');
}

export interface StockCluster {
  port: number;
  dir: string;
  password: string;
  account: Account | undefined;
  bin: Binaries & { dir: string };
  /** A connection URL for `database` (default `postgres`) as the cluster's superuser. */
  url(database?: string): string;
  stop(): Promise<void>;
}

export interface StockOptions {
  /** Extra `name=value` settings on top of the defaults (replication, ...). */
  settings?: string[];
  /** initdb's locale: C.UTF-8 by default, as a Debian server without other locales has it (not C). */
  locale?: string;
  /** A data directory made already (a standby's base backup): initdb is skipped. */
  existing?: boolean;
  password?: string;
  /** The port to listen on (a restarted standby keeps its own); default: a free one. */
  port?: number;
}

/** Initialises (unless `existing`) and starts a cluster in `dir` on a free port. */
export async function startStockCluster(dir: string, options: StockOptions = {}): Promise<StockCluster> {
  const binDir = stockBinDir();
  const account = await clusterAccount();
  const packaged = { initdb: join(binDir, 'initdb'), postgres: join(binDir, 'postgres') };
  const bin = { ...(await binariesFor(account, () => {}, packaged)), dir: binDir };
  const password = options.password ?? randomBytes(18).toString('hex');
  if (!options.existing) {
    await prepareClusterDir(dir, account);
    await initCluster(bin, dir, STOCK_USER, password, account, options.locale ?? 'C.UTF-8');
  }
  const port = options.port ?? (await freePort());
  const running = await startCluster(bin, dir, port, account, options.settings ?? []);
  const url = (database = 'postgres') => `postgresql://${STOCK_USER}:${password}@127.0.0.1:${port}/${database}`;
  return { port, dir, password, account, bin, url, stop: () => running.stop() };
}

/** An unused loopback port (listen on 0, then release it for the server). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => (port ? resolve(port) : reject(new Error('no port assigned'))));
    });
  });
}
