import pino, { type Logger } from 'pino';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../core/config.ts';
import type { DatabaseHandle } from './db/embedded.ts';
import { createOrm, migrate, type Orm } from '../core/db/orm.ts';
import type { Kernel } from '../core/kernel/kernel.ts';
import { assembleDeployment } from './assemble.ts';
import { recount, RecountUnsettled } from './db/recount.ts';
import { loadDeploymentPlugins } from './plugins.ts';
import { JobRunner } from './jobs/runner.ts';
import { BackgroundTasks } from './jobs/background.ts';
import { createDatabaseIfMissing } from './db/create-database.ts';
import { databaseFailure, describeDatabaseUrl } from './startup.ts';
import { PluginLoadError } from '../core/kernel/loader.ts';
import { databaseTopology } from './config.ts';

/** Everything the server and the admin CLI share: database, plugins, ORM, migrations applied. */
export interface Runtime {
  config: Config;
  kernel: Kernel;
  orm: Orm;
  db: DatabaseHandle;
  embedded: boolean;
  log: Logger;
  close(): Promise<void>;
}

/**
 * JSON logs on stderr: stdout is for command output (CLI JSON, the server's ready line).
 * `buffered` (the server): lines are written 4 KB at a time, and at least every 250 ms, and
 * once more on exit. One write per request line was a twelfth of a record GET's CPU; a line
 * now reaches the log at most a quarter second late. The writes are synchronous, as Node's own
 * stderr is on a pipe or a file: an asynchronous one wakes a thread-pool thread that, on a
 * server given one core, preempts the event loop (about 150 µs of a request's time per write,
 * 5 % of a record GET's throughput). Pino flushes only asynchronous destinations on exit, so
 * this one is flushed here.
 */
export function createLogger(config: Config, options: { buffered?: boolean } = {}): Logger {
  const destination = options.buffered ? pino.destination({ dest: 2, minLength: 4096, periodicFlush: 250, sync: true }) : pino.destination(2);
  if (options.buffered) {
    process.once('exit', () => {
      try {
        destination.flushSync();
      } catch {
        // A stderr that takes nothing more (closed, full): the lines cannot be written anyway.
      }
    });
  }
  return pino({ level: config.logLevel, redact: ['req.headers.authorization', 'req.headers["x-api-key"]'] }, destination);
}

/** Loaded only when needed: a process on a database URL never touches the embedded binaries. */
async function startEmbedded(config: Config, log: Logger, server: boolean): Promise<DatabaseHandle> {
  const { startEmbeddedDatabase } = await import('./db/embedded.ts');
  return startEmbeddedDatabase(config.dataDir, (msg) => log.info(msg), { server });
}

/**
 * A database that does not exist is created (the account needs CREATEDB): handy on a fresh
 * server, silent on a misspelt name, so the operator is told which one it made.
 */
async function createIfMissing(url: string, log: Logger): Promise<void> {
  await createDatabaseIfMissing(url, () =>
    log.warn(`database ${describeDatabaseUrl(url)} does not exist: creating it (check LABDATA_DATABASE_URL if that name is a mistake)`),
  ).catch(() => undefined); // the ORM's own connection attempt reports any failure, with its cause
}

export interface RuntimeOptions {
  /**
   * The job queue: `workers` runs jobs here (the server, which also owns an embedded database it
   * starts: app/db/embedded.ts); `queue` (default) installs or migrates
   * pg-boss's schema and lets writes queue jobs (migrate, bootstrap); `off` leaves it alone
   * (admin commands that never queue anything start faster).
   */
  jobs?: 'off' | 'queue' | 'workers';
  /** Hears each migration as it runs (the CLI's progress display). */
  progress?: (step: string, done: number, total: number) => void;
}

/**
 * Opens the runtime. A failure is a plugin's own (PluginLoadError, as is) or a database it cannot
 * use: one line naming the setting to check (startup.ts `databaseFailure`), for the server and
 * the CLI alike.
 */
export async function openRuntime(config: Config, log: Logger = createLogger(config), options: RuntimeOptions = {}): Promise<Runtime> {
  return assemble(config, log, options).catch((err: unknown) => {
    throw err instanceof PluginLoadError ? err : databaseFailure(err, config.databaseUrl);
  });
}

async function assemble(config: Config, log: Logger, options: RuntimeOptions): Promise<Runtime> {
  // The composition: this process's plugin list, handed to the kernel.
  const kernel = assembleDeployment(config, await loadDeploymentPlugins(config.plugins), log as unknown as FastifyBaseLogger);
  const embedded = !config.databaseUrl;
  const db = embedded ? await startEmbedded(config, log, options.jobs === 'workers') : { url: config.databaseUrl!, stop: async () => {} };
  // Behind a pooler in transaction mode, session work (migration locks, LISTEN, the job queue)
  // goes to a direct connection to the primary (docs/operations.md, "Replicas and poolers").
  const topology = databaseTopology(config.settings);
  const sessionUrl = topology.directUrl ?? db.url;
  let orm: Orm;
  try {
    if (!embedded) await createIfMissing(sessionUrl, log);
    orm = await createOrm({ url: sessionUrl, entities: kernel.entities, migrations: kernel.migrations });
    const applied = await migrate(orm, options.progress);
    if (applied.length) log.info({ migrations: applied }, 'migrations applied');
    // Counters introduced on a database that already holds rows start from a full count.
    // Should other instances' writes keep it from settling, the server still starts: the operator
    // is told to finish it with `labdata recount`.
    if (applied.some((name) => name.endsWith('-counters'))) {
      await recount(kernel.services.counters, orm.em.fork()).catch((err: unknown) => {
        if (!(err instanceof RecountUnsettled)) throw err;
        log.warn({ err }, 'counters not yet exact after the new counters migration: run labdata recount');
      });
    }
    if (topology.pooled) {
      await poolerSessionDefaults(orm, log);
      await orm.close();
      orm = await createOrm({ url: db.url, entities: kernel.entities, migrations: kernel.migrations, pooled: true });
    }
  } catch (err) {
    await db.stop();
    throw err;
  }
  const jobs = new JobRunner(kernel.services.jobs);
  if (kernel.services.jobs.defined && options.jobs !== 'off') {
    // pg-boss installs or migrates its own schema (`pgboss`) here, so `labdata migrate` covers it.
    try {
      await jobs.start({ url: sessionUrl, orm, services: kernel.services, log: log as unknown as FastifyBaseLogger, workers: options.jobs === 'workers', concurrency: config.jobConcurrency });
    } catch (err) {
      await orm.close();
      await db.stop();
      throw err;
    }
  }
  // The plugins' background tasks run where job workers run: in the serving process.
  const background = new BackgroundTasks(kernel.services.jobs);
  if (options.jobs === 'workers') background.start({ orm, services: kernel.services, log: log as unknown as FastifyBaseLogger });
  return {
    config,
    kernel,
    orm,
    db,
    embedded,
    log,
    async close() {
      // Workers and tasks first (they use the pool), then the pool, then the database.
      await background.stop();
      await jobs.stop();
      await orm.close();
      await db.stop();
    },
  };
}

/**
 * A pooler in transaction mode refuses the startup options that give the service's sessions their
 * settings (core/db/orm.ts: no JIT, no parallel workers for a page): through it they are the
 * database's defaults instead, set here on the direct connection (the service's role owns its
 * database). A role that may not is told what to ask its database's owner for.
 */
async function poolerSessionDefaults(orm: Orm, log: Logger): Promise<void> {
  const em = orm.em.fork();
  const [{ name }] = await em.execute<{ name: string }[]>('select current_database() as name');
  const database = `"${name.replace(/"/g, '""')}"`;
  const statements = [`alter database ${database} set jit = off`, `alter database ${database} set max_parallel_workers_per_gather = 0`];
  try {
    for (const statement of statements) await em.execute(statement);
  } catch (err) {
    log.warn({ reason: (err as Error).message }, `through the pooler the service's sessions need these defaults; ask the database's owner to run: ${statements.join('; ')}`);
  }
}
