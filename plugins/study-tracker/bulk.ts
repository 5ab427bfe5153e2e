import { createHash } from 'node:crypto';
import { db, type EntityManager, raw, type Sql, sql } from '../../core/public.ts';

/** A column of a bulk statement: its name and its SQL type (as `json_to_recordset` reads it). */
export type Column = readonly [name: string, type: string];

/** Rows go to the database this many at a time: one statement per batch, never one per row. */
export const BATCH = 2000;

/** The batch as rows: `json_to_recordset(<batch>) as x (...)`. */
function recordset(columns: readonly Column[], rows: readonly object[]) {
  return sql`json_to_recordset(${JSON.stringify(rows)}::json) as x (${raw(columns.map(([n, t]) => `"${n}" ${t}`).join(', '))})`;
}

const names = (columns: readonly Column[], prefix = '') => columns.map(([n]) => `${prefix}"${n}"`).join(', ');

/**
 * Inserts rows (objects keyed by column name) in batches of `insert ... select from
 * json_to_recordset(...)`: one statement per batch, the rows as one JSON parameter. `suffix`
 * ends each statement (`on conflict do nothing`). Returns how many rows were inserted.
 */
export async function insertRows(em: EntityManager, table: string, columns: readonly Column[], rows: readonly object[], suffix = ''): Promise<number> {
  let inserted = 0;
  await inBatches(rows, (batch) => sql`with ins as (insert into ${raw(table)} (${raw(names(columns))})
      select ${raw(names(columns, 'x.'))} from ${recordset(columns, batch)} ${raw(suffix)} returning 1) select count(*)::int as n from ins`,
  (q) => db.query<{ n: number }>(em, q).then(([row]) => void (inserted += row.n)));
  return inserted;
}

/**
 * Updates rows by id in batches (`update ... from json_to_recordset(...)`): `set` is the SQL of
 * the assignments, reading the new values as `x."column"`.
 */
export async function updateRows(em: EntityManager, table: string, columns: readonly Column[], rows: readonly object[], set: string): Promise<void> {
  await inBatches(rows, (batch) => sql`update ${raw(table)} t set ${raw(set)} from ${recordset(columns, batch)} where t.id = x.id`,
    (q) => db.query(em, q));
}

/** One statement per batch, each batch's JSON built while the database runs the one before. */
async function inBatches(rows: readonly object[], build: (batch: readonly object[]) => Sql, run: (q: Sql) => Promise<unknown>): Promise<void> {
  await pipelined(async (send) => {
    for (let i = 0; i < rows.length; i += BATCH) {
      const q = build(rows.slice(i, i + BATCH));
      await send(() => run(q));
    }
  });
}

/**
 * Statements one at a time, in order, on the transaction, each sent as soon as the one before is
 * done, so that `work` prepares the next (parsing, building JSON: this core) while the database
 * runs the last (the other core). A failure is thrown to `work` at its next `send`, or here.
 */
export async function pipelined(work: (send: (run: () => Promise<unknown>) => Promise<void>) => Promise<void>): Promise<void> {
  let running: Promise<unknown> | undefined;
  const send = async (run: () => Promise<unknown>) => {
    await running;
    running = run();
    // Handled now, so that a failure while the next one is prepared is no unhandled rejection;
    // the next `await running` still throws it.
    running.catch(() => {});
  };
  try {
    await work(send);
    await running;
  } catch (err) {
    // The statement under way is let finish (its failure, if any, is not the one to report)
    // before the caller rolls the transaction back.
    await running?.catch(() => {});
    throw err;
  }
}

/** A short digest of what was written for a record: a later run compares it to tell a change. */
export function fingerprint(value: unknown): string {
  return createHash('sha1').update(JSON.stringify(value)).digest('base64url').slice(0, 22);
}
