// One throw-away PostgreSQL database per test: tests can run in parallel (tap runs several
// files at once) without seeing each other's rows or migrations.
import { createHash, randomBytes } from 'node:crypto';
import pg from 'pg';

/** The part of a tap `t` this helper needs; keeps the helper independent of tap's types. */
export interface Teardown {
  teardown(fn: () => unknown): void;
}

/**
 * Creates an empty database named `t_<random hex>` and returns its connection URL.
 * The database is dropped in `t.teardown`, with `WITH (FORCE)` so connections a test
 * forgot to close do not make the drop fail.
 */
export async function createTestDatabase(t: Teardown): Promise<string> {
  const adminUrl = adminDatabaseUrl();
  const name = `t_${randomBytes(8).toString('hex')}`;
  await runAdmin(adminUrl, `CREATE DATABASE ${pg.escapeIdentifier(name)}`);
  t.teardown(() => runAdmin(adminUrl, `DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`));

  return databaseUrl(adminUrl, name);
}

/** Set by test/support/run.ts for every test process. */
function adminDatabaseUrl(): string {
  const url = process.env.LABDATA_TEST_ADMIN_URL;
  if (!url) {
    throw new Error(
      'LABDATA_TEST_ADMIN_URL is not set: run tests through `npm test` ' +
        '(test/support/run.ts provides the database), e.g. `npm test -- test/x.test.ts`',
    );
  }
  return url;
}

/** CREATE/DROP DATABASE cannot run inside a transaction, so use a plain one-off client. */
async function runAdmin(adminUrl: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/**
 * A database that already holds the migrations `build` applies: cloned from a template that the
 * first caller of the run builds (under an advisory lock; the others wait for it). Migrating
 * every test's empty database was most of a test server's start-up — a few seconds of
 * PostgreSQL CPU for ~20 plugins' DDL, times every test file. `key` names what `build` does
 * (e.g. the plugin list): one template per key and per run (test/support/run.ts sets
 * LABDATA_TEST_RUN_ID, so an external server never serves a stale template of an older run).
 */
export async function createMigratedDatabase(t: Teardown, key: string, build: (url: string) => Promise<void>): Promise<string> {
  const adminUrl = adminDatabaseUrl();
  const run = process.env.LABDATA_TEST_RUN_ID ?? 'local';
  const template = `tpl_${run}_${createHash('sha256').update(key).digest('hex').slice(0, 12)}`.toLowerCase();
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query('select pg_advisory_lock(hashtext($1))', [template]);
    const found = await client.query<{ datistemplate: boolean }>('select datistemplate from pg_database where datname = $1', [template]);
    if (!found.rows[0]?.datistemplate) {
      // Absent, or left half-built by a test process that died: build it (again).
      await client.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(template)} WITH (FORCE)`);
      await client.query(`CREATE DATABASE ${pg.escapeIdentifier(template)}`);
      await build(databaseUrl(adminUrl, template));
      await client.query(`ALTER DATABASE ${pg.escapeIdentifier(template)} WITH IS_TEMPLATE true`);
    }
    await client.query('select pg_advisory_unlock(hashtext($1))', [template]);
    const name = `t_${randomBytes(8).toString('hex')}`;
    // FILE_COPY: a small database is copied as files, without WAL-logging every block.
    await client.query(`CREATE DATABASE ${pg.escapeIdentifier(name)} TEMPLATE ${pg.escapeIdentifier(template)} STRATEGY FILE_COPY`);
    t.teardown(() => runAdmin(adminUrl, `DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`));
    return databaseUrl(adminUrl, name);
  } finally {
    await client.end();
  }
}

function databaseUrl(adminUrl: string, name: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}
