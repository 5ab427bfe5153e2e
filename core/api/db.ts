/**
 * `db` of the kernel's entry point: running SQL built with `sql`, the write transaction, row
 * locks in the kernel's order, and a plugin's schema migrations.
 */
/** Runs a statement and returns its rows, or its first row. */
export { query, queryOne } from '../db/sql.ts';
/** Joins SQL fragments with a separator; an ISO-8601 string from a timestamp column. */
export { join, isoDate } from '../db/sql.ts';
/** A write transaction that retries on serialization failures and deadlocks. */
export { writeTransaction } from '../db/transaction.ts';
/** Call right after locking the record a write changes (unless `lockLocated` locked it): its `If-Match` is checked then. */
export { recordLocked } from '../db/transaction.ts';
/** Reads the response of a committed write, again while the database drops connections (never a 503 for a done write). */
export { readAfterCommit } from '../db/transaction.ts';
/** Row locks taken in the one global order (parent before child, no deadlocks between writers). */
export { LOCK_ORDER, lockLocated, lockChildren, type RowLock, type LockTable } from '../db/locks.ts';
/** The `onCreate` instant of an entity: `createdAt` and `updatedAt` of a new record are equal. */
export { creationTime } from '../db/timestamps.ts';
/** A plugin's schema migration (name prefixed with the plugin name). */
export type { MigrationDefinition } from '../db/orm.ts';
