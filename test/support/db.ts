// One throw-away PostgreSQL database per test: tests can run in parallel (tap runs several
// files at once) without seeing each other's rows or migrations.
import { randomBytes } from 'node:crypto';
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

  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
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
