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

interface NativePool {
  query(config: { text: string; values: unknown[] }): Promise<{ rows: unknown[] }>;
}

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

/** `?` placeholders as PostgreSQL's `$1, $2, ...`, memoised per statement text. */
const numbered = new Map<string, string>();
export function numberedText(text: string): string {
  let out = numbered.get(text);
  if (out === undefined) {
    let i = 0;
    out = text.replace(/\?/g, () => `$${++i}`);
    // Statement texts are built by code, so the set is bounded; the cap only guards against a bug.
    if (numbered.size < 5000) numbered.set(text, out);
  }
  return out;
}

/**
 * Runs a statement. Outside a transaction it goes straight to the pool as a parameterised
 * query (the server binds the values): the ORM's raw path would format every value into the
 * SQL text on the client, which costs more CPU than the query itself on a hot read. Inside a
 * transaction it must use the transaction's connection, so it goes through the ORM.
 */
export async function query<T = Record<string, unknown>>(em: EntityManager, q: Sql): Promise<T[]> {
  statementObserver.observe?.(q);
  if (em.isInTransaction()) return (await em.execute(q.text, [...q.params])) as T[];
  const pool = await nativePool(em);
  const result = await pool.query({ text: numberedText(q.text), values: q.params as unknown[] });
  return result.rows as T[];
}

export async function queryOne<T = Record<string, unknown>>(em: EntityManager, q: Sql): Promise<T | undefined> {
  const rows = await query<T>(em, q);
  return rows[0];
}

/** Raw timestamps come back as text from MikroORM's pg driver; the wire wants ISO 8601 UTC. */
export function isoDate(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  const d = value instanceof Date ? value : new Date(String(value));
  return d.toISOString();
}
