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
  /** The same for the same text, worked out from how the fragment was built (`sql`, `raw`, `join`); 0 when unknown. */
  readonly shape: number;
  constructor(text: string, params: readonly unknown[] = [], shape = 0) {
    this.text = text;
    this.params = params;
    this.shape = shape;
  }
}

/**
 * A small integer per distinct statement text, derived from how the text was built — the
 * template's call site (the same strings object on every call), then each value's part: a
 * fragment's own shape, a list's length, or a placeholder — so `query` finds a statement's
 * prepared form without hashing its text: a permission-filtered feed is a 4–7 KB string of
 * concatenations, flattened and hashed on every request, where walking its parts is a few
 * integer look-ups. Bounded: past the cap, fragments get 0 and statements are found by text.
 */
interface ShapeNode {
  id: number;
  next?: Map<number, ShapeNode>;
}
const MAX_SHAPES = 100_000;
let shapeCount = 0;
const templateRoots = new WeakMap<TemplateStringsArray, ShapeNode>();
const joinRoots = new Map<string, ShapeNode>();
const rawShapes = new Map<string, number>();

function newShape(): ShapeNode | undefined {
  return shapeCount < MAX_SHAPES ? { id: ++shapeCount } : undefined;
}

/** The node after `node` for one more part: a fragment's shape (> 0), a placeholder (0), a list of n (-n). */
function nextShape(node: ShapeNode | undefined, part: number): ShapeNode | undefined {
  if (!node) return undefined;
  let next = node.next?.get(part);
  if (!next) {
    next = newShape();
    if (next) (node.next ??= new Map()).set(part, next);
  }
  return next;
}

function templateRoot(strings: TemplateStringsArray): ShapeNode | undefined {
  let root = templateRoots.get(strings);
  if (!root) {
    root = newShape();
    if (root) templateRoots.set(strings, root);
  }
  return root;
}

export function sql(strings: TemplateStringsArray, ...values: unknown[]): Sql {
  let text = strings[0];
  const params: unknown[] = [];
  let node = templateRoot(strings);
  values.forEach((value, i) => {
    if (value instanceof Sql) {
      text += value.text;
      params.push(...value.params);
      node = value.shape ? nextShape(node, value.shape) : undefined;
    } else if (Array.isArray(value)) {
      // A list (`id in (${ids})`): one placeholder per item, so the server binds each value.
      text += value.map(() => '?').join(', ');
      params.push(...value);
      node = nextShape(node, -value.length);
    } else {
      text += '?';
      params.push(value);
      node = nextShape(node, 0);
    }
    text += strings[i + 1];
  });
  return new Sql(text, params, node?.id ?? 0);
}

/** Trusted SQL text (identifiers chosen by code, never by the caller). */
export function raw(text: string): Sql {
  let shape = rawShapes.get(text);
  if (shape === undefined) {
    shape = newShape()?.id ?? 0;
    if (shape) rawShapes.set(text, shape);
  }
  return new Sql(text, [], shape);
}

export function join(parts: Sql[], separator = ', '): Sql {
  let node = joinRoots.get(separator);
  if (!node && (node = newShape())) joinRoots.set(separator, node);
  for (const p of parts) node = p.shape ? nextShape(node, p.shape) : undefined;
  return new Sql(parts.map((p) => p.text).join(separator), parts.flatMap((p) => p.params), node?.id ?? 0);
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
const preparedByShape = new Map<number, Prepared>();
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

/** `prepare` for a statement, found by its shape when it has one (no hashing of its text). */
function prepareSql(q: Sql): Prepared {
  if (!q.shape) return prepare(q.text);
  let out = preparedByShape.get(q.shape);
  if (out === undefined) {
    out = prepare(q.text);
    preparedByShape.set(q.shape, out);
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
  const { name, text } = prepareSql(q);
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
