import pino, { type Logger } from 'pino';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from './config.ts';
import { startEmbeddedDatabase, type DatabaseHandle } from './db/embedded.ts';
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

export async function openRuntime(config: Config, log: Logger = createLogger(config)): Promise<Runtime> {
  const kernel = await createKernel(config, log as unknown as FastifyBaseLogger);
  const embedded = !config.databaseUrl;
  const db = embedded ? await startEmbeddedDatabase(config.dataDir, (msg) => log.info(msg)) : { url: config.databaseUrl!, stop: async () => {} };
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
