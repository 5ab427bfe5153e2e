import pg from 'pg';
import { sqlStateOf } from '../../core/db/errors.ts';

/**
 * Creates the database `url` names if it does not exist, from the server's `postgres` database
 * (the account needs CREATEDB); `creating` hears of it first. Processes starting together may
 * all find it missing: the later creates lose to a unique index (23505) or find it made (42P04)
 * and go on, as they would had they come a moment later.
 */
export async function createDatabaseIfMissing(url: string, creating: (name: string) => void = () => {}): Promise<void> {
  if (await exists(url)) return;
  const admin = new URL(url);
  const name = decodeURIComponent(admin.pathname.slice(1));
  admin.pathname = '/postgres';
  creating(name);
  const client = quietClient(admin.toString());
  try {
    await client.connect();
    await client.query(`create database ${pg.escapeIdentifier(name)}`);
  } catch (err) {
    if (!['23505', '42P04'].includes(sqlStateOf(err) ?? '')) throw err;
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function exists(url: string): Promise<boolean> {
  const client = quietClient(url);
  try {
    await client.connect();
    return true;
  } catch (err) {
    if (sqlStateOf(err) === '3D000') return false; // invalid_catalog_name
    throw err;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** A short-lived client: a server that goes away under it is an error of the call, not a crash. */
export function quietClient(url: string): pg.Client {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  client.on('error', () => undefined);
  return client;
}
