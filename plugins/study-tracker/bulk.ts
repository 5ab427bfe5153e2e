import { createHash } from 'node:crypto';
import { db, type EntityManager, raw, sql } from '../../core/public.ts';

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
  for (let i = 0; i < rows.length; i += BATCH) {
    const [row] = await db.query<{ n: number }>(
      em,
      sql`with ins as (insert into ${raw(table)} (${raw(names(columns))})
        select ${raw(names(columns, 'x.'))} from ${recordset(columns, rows.slice(i, i + BATCH))} ${raw(suffix)} returning 1) select count(*)::int as n from ins`,
    );
    inserted += row.n;
  }
  return inserted;
}

/**
 * Updates rows by id in batches (`update ... from json_to_recordset(...)`): `set` is the SQL of
 * the assignments, reading the new values as `x."column"`.
 */
export async function updateRows(em: EntityManager, table: string, columns: readonly Column[], rows: readonly object[], set: string): Promise<void> {
  for (let i = 0; i < rows.length; i += BATCH) {
    await db.query(em, sql`update ${raw(table)} t set ${raw(set)} from ${recordset(columns, rows.slice(i, i + BATCH))} where t.id = x.id`);
  }
}

/** A short digest of what was written for a record: a later run compares it to tell a change. */
export function fingerprint(value: unknown): string {
  return createHash('sha1').update(JSON.stringify(value)).digest('base64url').slice(0, 22);
}
