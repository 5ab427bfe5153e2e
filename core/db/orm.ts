import { MikroORM, type EntityManager } from '@mikro-orm/postgresql';
import { Migrator, type Migration } from '@mikro-orm/migrations';
import type { EntitySchema } from '@mikro-orm/core';
import type { Pool } from 'pg';
import { guardPool } from './pool-guard.ts';
import { readRouting } from './sql.ts';
import { writeRecorded } from '../activity/index.ts';

/** A migration as plugins declare it: a stable, plugin-prefixed name and its SQL statements. */
export interface MigrationDefinition {
  name: string;
  sql: string[];
}

export interface OrmOptions {
  url: string;
  entities: EntitySchema[];
  migrations: MigrationDefinition[];
  debug?: boolean;
  /** `url` is a pooler in transaction mode: no startup options, no named statements (app/db/database.ts). */
  pooled?: boolean;
}

export type Orm = MikroORM;
export type { EntityManager };

async function migrationClass(def: MigrationDefinition): Promise<new (...args: any[]) => Migration> {
  const { Migration: Base } = await import('@mikro-orm/migrations');
  return class extends Base {
    override async up(): Promise<void> {
      for (const statement of def.sql) this.addSql(statement);
    }
  };
}

export async function createOrm(options: OrmOptions): Promise<Orm> {
  const migrationsList = await Promise.all(
    options.migrations.map(async (def) => ({ name: def.name, class: await migrationClass(def) })),
  );
  const orm = await MikroORM.init({
    clientUrl: options.url,
    entities: options.entities,
    extensions: [Migrator],
    migrations: { migrationsList, snapshot: false, silent: true, allOrNothing: true, transactional: true },
    debug: options.debug ?? false,
    // Each request and each tool call forks its own EntityManager (no shared identity map).
    allowGlobalContext: false,
    pool: { min: 0, max: 10 },
    // connectionTimeoutMillis: a request waits at most this long for a connection, then fails as
    // "database unavailable" (503 with Retry-After, app/http/database-failure.ts), never hangs.
    // plan_cache_mode: the hot reads run as named statements (core/db/sql.ts) whose generic plan
    // walks the same indexes as a custom one, but PostgreSQL kept choosing custom plans and
    // re-planned (~10 ms) a 2 ms read on every call (unnamed statements are planned every call).
    // onPoolCreated: a lost connection gives its pool slot back (core/db/pool-guard.ts).
    // max_parallel_workers_per_gather=0: a page walks an index and stops; parallel workers cost
    // ~10 ms a read (measured at 300,000 assays) and take cores the other requests need.
    // jit=off: a generic plan's cost is estimated blind to the caller, so a 5 ms permission-filtered
    // page was estimated past jit_above_cost and compiled on every run (3-4 s on a stock
    // PostgreSQL 15, JIT on by default); no read here is long enough for compiling to pay back.
    // A pooler in transaction mode refuses startup options: app/db/database.ts sets these another way.
    driverOptions: {
      connectionTimeoutMillis: 5_000,
      options: options.pooled ? undefined : '-c plan_cache_mode=force_generic_plan -c max_parallel_workers_per_gather=0 -c jit=off',
      onPoolCreated: guardPool,
    },
  });
  // Every `em.fork()` sets `allowGlobalContext` and sets it back, and each set re-syncs the
  // configuration: it writes process.env (MIKRO_ORM_COLORS) and resets the logger, two
  // environment writes per request (about 4 % of a record GET's CPU). What it syncs (colors,
  // debug, the slow-query logger) is fixed once MikroORM.init has synced it; nothing sets them later.
  (orm.config as unknown as { sync(): void }).sync = () => {};
  // Activity entries go in after each flush (core/activity): every fork's events are copied from here.
  orm.em.getEventManager().registerSubscriber({ afterFlush: ({ em }) => writeRecorded(em as EntityManager) });
  if (options.pooled) readRouting.unnamed.add(orm.em.getConnection());
  return orm;
}

/**
 * Applies pending migrations; `progress` hears each one as it starts (`labdata migrate` shows them).
 * Instances (and `labdata migrate`/`bootstrap`) started together on one database take turns: a
 * session advisory lock on a connection of its own, held until the migrations are in; the next one
 * then finds nothing pending. (Without it both would create the migrations table at once, and one
 * would fail.) The lock goes with the connection should the process die.
 */
export async function migrate(orm: Orm, progress?: (step: string, done: number, total: number) => void): Promise<string[]> {
  const pool = (await orm.em.getConnection().getNativeClient()) as unknown as Pool;
  const client = await pool.connect();
  try {
    await client.query(`select pg_advisory_lock(hashtext('labdata migrations'))`);
    try {
      return await applyPending(orm, progress);
    } finally {
      // A lost connection has let go of the lock already; the failure that matters is the one above.
      await client.query(`select pg_advisory_unlock(hashtext('labdata migrations'))`).catch(() => undefined);
    }
  } finally {
    client.release();
  }
}

async function applyPending(orm: Orm, progress?: (step: string, done: number, total: number) => void): Promise<string[]> {
  if (!progress) return (await orm.migrator.up()).map((m) => m.name);
  const total = (await orm.migrator.getPending()).length;
  let done = 0;
  const listener = (event: { name: string }) => progress(event.name, done++, total);
  orm.migrator.on('migrating', listener);
  try {
    const applied = await orm.migrator.up();
    progress('migrations applied', total, total);
    return applied.map((m) => m.name);
  } finally {
    orm.migrator.off('migrating', listener);
  }
}

export const pendingMigrations = async (orm: Orm): Promise<number> => (await orm.migrator.getPending()).length;
