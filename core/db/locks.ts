import type { EntityManager } from '@mikro-orm/postgresql';
import { query, raw, sql, type Sql } from './sql.ts';
import { recordLocked, RestartTransaction } from './transaction.ts';

/**
 * The one order in which writers lock the record chain: a parent before its children, and
 * within one table by id. Two writers that lock in the same order never wait on each other in
 * a cycle, so a delete of a project and a move of one of its studies run one after the other
 * instead of interleaving (issue 11, "data and races").
 */
export const LOCK_ORDER = ['project', 'study', 'assay'] as const;
export type LockTable = (typeof LOCK_ORDER)[number];

/**
 * A row to lock: `update` for the record the write changes or deletes, `share` for a parent
 * that must neither go away nor change while the write runs (writers of the parent itself wait).
 */
export interface RowLock {
  table: LockTable;
  id: string;
  mode: 'update' | 'share';
}

/**
 * Locks the organization's rows in LOCK_ORDER (one statement per table and mode); rows that
 * are gone, or another organization's, are skipped (the checks that follow answer 404).
 */
export async function lockRows(em: EntityManager, organizationId: string, locks: RowLock[]): Promise<void> {
  // Outside a transaction a row lock ends with its own statement: that is always a bug.
  if (!em.isInTransaction()) throw new Error('lockRows runs inside a write transaction');
  const byKey = new Map<string, RowLock>();
  for (const l of locks) {
    const key = `${l.table}:${l.id}`;
    // A row asked for in both modes is locked once, in the stronger one.
    if (byKey.get(key)?.mode !== 'update') byKey.set(key, l);
  }
  for (const table of LOCK_ORDER) {
    const rows = [...byKey.values()].filter((l) => l.table === table);
    const update = rows.filter((l) => l.mode === 'update').map((l) => l.id).sort();
    const share = rows.filter((l) => l.mode === 'share').map((l) => l.id).sort();
    // Writes of this service never mix modes within one table, so share-then-update keeps the order total.
    for (const [ids, mode] of [[share, 'share'], [update, 'update']] as const) {
      if (!ids.length) continue;
      await query(em, sql`select id from ${raw(table)} where id in (${ids}) and organization_id = ${organizationId} order by id for ${raw(mode)}`);
    }
  }
}

/**
 * Locks where a record sits: `locate` reads the rows to lock (the record and its parents, by
 * its current place), they are locked in order, then `locate` runs again. Until a row is locked
 * the record may move, so a different answer the second time restarts the transaction
 * (writeTransaction runs it again); the same answer means the place is now fixed until commit,
 * and every check after this sees the current state.
 */
export async function lockLocated(em: EntityManager, organizationId: string, locate: () => Promise<RowLock[]>): Promise<void> {
  const key = (locks: RowLock[]) => locks.map((l) => `${l.table}:${l.id}:${l.mode}`).sort().join(',');
  const before = await locate();
  await lockRows(em, organizationId, before);
  if (key(await locate()) !== key(before)) throw new RestartTransaction();
  // A row locked for update is the record the write changes (or the parent whose writers it orders).
  if (before.some((l) => l.mode === 'update')) await recordLocked(em);
}

/**
 * Locks, for update, the rows of `table` matching `where` (e.g. the studies of the projects
 * being deleted), in id order, and returns their ids. Run after the parents are locked, it sees
 * the children as they are now: one moved away meanwhile is not taken along.
 */
export async function lockChildren(em: EntityManager, organizationId: string, table: LockTable, where: Sql): Promise<string[]> {
  const rows = await query<{ id: string }>(
    em,
    sql`select id from ${raw(table)} where ${where} and organization_id = ${organizationId} order by id for update`,
  );
  return rows.map((r) => r.id);
}
