import crypto from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';

/**
 * A parameterised SQL fragment. Values are always bound as parameters (`?` placeholders, as
 * MikroORM's `execute` expects); fragments nest, so permission filters compose into queries.
 * An array value expands to a list (`id in (${ids})`); it must not be empty.
 */
export class Sql {
  readonly text: string;
  readonly params: readonly unknown[];
  constructor(text: string, params: readonly unknown[] = []) {
    this.text = text;
    this.params = params;
  }
}

export function sql(strings: TemplateStringsArray, ...values: unknown[]): Sql {
  let text = strings[0];
  const params: unknown[] = [];
  values.forEach((value, i) => {
    if (value instanceof Sql) {
      text += value.text;
      params.push(...value.params);
    } else if (Array.isArray(value)) {
      // A list (`id in (${ids})`): one placeholder per item, so the server binds each value.
      text += value.map(() => '?').join(', ');
      params.push(...value);
    } else {
      text += '?';
      params.push(value);
    }
    text += strings[i + 1];
  });
  return new Sql(text, params);
}

/** Trusted SQL text (identifiers chosen by code, never by the caller). */
export function raw(text: string): Sql {
  return new Sql(text);
}

export function join(parts: Sql[], separator = ', '): Sql {
  return new Sql(parts.map((p) => p.text).join(separator), parts.flatMap((p) => p.params));
}

/** The `pg` pool behind an ORM connection, found once per connection. */
const pools = new WeakMap<object, Promise<NativePool>>();

export interface NativePool {
  query(config: { name?: string; text: string; values: unknown[] }): Promise<{ rows: unknown[] }>;
}

/**
 * Where a read outside a transaction goes instead of the ORM's pool (app/db/replicas.ts sends an
 * operation's reads to a standby); `unnamed`: connections whose statements must not outlive
 * their transaction (a pooler in transaction mode, core/db/orm.ts).
 */
export const readRouting: { pool?: () => NativePool | undefined; unnamed: WeakSet<object> } = { unnamed: new WeakSet() };

function nativePool(em: EntityManager): Promise<NativePool> {
  const connection = em.getConnection();
  let pool = pools.get(connection);
  if (!pool) {
    pool = (connection as unknown as { getNativeClient(): Promise<NativePool> }).getNativeClient();
    pools.set(connection, pool);
  }
  return pool;
}

/** Sees every statement `query` runs (the plan-guard tests EXPLAIN them); unset in production. */
export const statementObserver: { observe?: (q: Sql) => void } = {};

interface Prepared {
  name: string;
  text: string;
}

/**
 * `?` placeholders as PostgreSQL's `$1, $2, ...`, with a statement name derived from the text,
 * memoised per statement text. Statement texts are built by code, so the set is bounded; past
 * the cap (a bug) statements run unnamed instead of growing every connection's cache.
 */
const prepared = new Map<string, Prepared>();
function prepare(text: string): Prepared {
  let out = prepared.get(text);
  if (out === undefined) {
    let i = 0;
    const numbered = text.replace(/\?/g, () => `$${++i}`);
    if (prepared.size >= 5000) return { name: '', text: numbered };
    out = { name: 'l' + crypto.createHash('sha1').update(numbered).digest('base64url').slice(0, 20), text: numbered };
    prepared.set(text, out);
  }
  return out;
}

export const numberedText = (text: string): string => prepare(text).text;

/**
 * Runs a statement. Outside a transaction it goes straight to the pool as a parameterised
 * query (the server binds the values): the ORM's raw path would format every value into the
 * SQL text on the client, which costs more CPU than the query itself on a hot read. Inside a
 * transaction it must use the transaction's connection, so it goes through the ORM.
 */
export async function query<T = Record<string, unknown>>(em: EntityManager, q: Sql): Promise<T[]> {
  statementObserver.observe?.(q);
  if (em.isInTransaction()) return (await em.execute(q.text, [...q.params])) as T[];
  const pool = readRouting.pool?.() ?? (await nativePool(em));
  // Named, so each pooled connection parses and plans a hot read once (PostgreSQL then reuses
  // the plan): planning these permission-filtered statements costs more than running them.
  const { name, text } = prepare(q.text);
  const named = name && !readRouting.unnamed.has(em.getConnection());
  const result = await pool.query({ name: named ? name : undefined, text, values: q.params as unknown[] });
  return result.rows as T[];
}

export async function queryOne<T = Record<string, unknown>>(em: EntityManager, q: Sql): Promise<T | undefined> {
  const rows = await query<T>(em, q);
  return rows[0];
}

const PG_UTC = /^(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d)(?:\.(\d+))?\+00$/;

/**
 * Raw timestamps come back as text from the pg driver; the wire wants ISO 8601 UTC with
 * milliseconds. The session runs in UTC, so the common case is a rewrite of the text (parsing
 * every timestamp of a page through Date showed up in profiles); anything else goes through Date.
 */
export function isoDate(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string') {
    const m = PG_UTC.exec(value);
    if (m) return `${m[1]}T${m[2]}.${(m[3] ?? '').padEnd(3, '0').slice(0, 3)}Z`;
  }
  const d = value instanceof Date ? value : new Date(String(value));
  return d.toISOString();
}
