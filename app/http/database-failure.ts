import { OptimisticLockError } from '@mikro-orm/core';
import { errorChain, isConnectionFailure, sqlStateOf } from '../../core/db/errors.ts';

/**
 * What a database error means to the client: the one place PostgreSQL errors (and the
 * driver's connection errors) are mapped to HTTP statuses. The REST error handler and the MCP
 * endpoint both use it, so no database error reaches a client as a 500.
 */
export interface DatabaseFailure {
  status: 400 | 404 | 409 | 503;
  message: string;
  /** Seconds for `Retry-After`: the request may succeed if sent again later. */
  retryAfter?: number;
  /** The cause is the database being unreachable (not the request). */
  unavailable?: boolean;
}

/** Seconds a client should wait before retrying while the database is unreachable. */
export const OUTAGE_RETRY_AFTER = 5;

const CONFLICT = 'The request conflicted with concurrent changes to the same records; try again';

/** The client-facing meaning of a database error, or undefined when it is not one (a real 500). */
export function databaseFailure(error: unknown): DatabaseFailure | undefined {
  if (isConnectionFailure(error)) {
    return { status: 503, message: 'The database is unavailable; try again shortly', retryAfter: OUTAGE_RETRY_AFTER, unavailable: true };
  }
  if (error instanceof OptimisticLockError) {
    return { status: 409, message: 'The record was changed by another request; reload it and try again' };
  }
  const state = sqlStateOf(error);
  if (!state) return undefined;
  if (state === '40001' || state === '40P01' || state === '55P03') {
    // Only after the transaction helper's own retries ran out (core/db/transaction.ts).
    return { status: 409, message: CONFLICT, retryAfter: 1 };
  }
  if (state === '23503') {
    // Inserting or updating towards a row that is gone (deleted meanwhile) is "not found";
    // deleting a row something still refers to is a conflict with that other record.
    const detail = errorChain(error).map((e) => `${String(e.detail ?? '')} ${String(e.message ?? '')}`).join(' ');
    if (/still referenced/i.test(detail)) return { status: 409, message: 'The record is still referred to by other records' };
    return { status: 404, message: 'A record this request refers to does not exist (it may have just been deleted)' };
  }
  if (state === '23505') return { status: 409, message: 'A record with the same unique value already exists' };
  if (state === '23P01' || state === '23001') return { status: 409, message: CONFLICT };
  if (state.startsWith('23') || state.startsWith('22')) {
    // Class 22 (data exception: a NUL character, a number out of range) and the remaining
    // integrity rules (not null, check): a value the caller sent that cannot be stored.
    return { status: 400, message: 'A value in the request cannot be stored (for example it contains a NUL character or is out of range)' };
  }
  if (state === '57014') {
    // Statement timeout or cancellation: the database is overloaded, not the request wrong.
    return { status: 503, message: 'The database took too long to answer; try again shortly', retryAfter: OUTAGE_RETRY_AFTER };
  }
  return undefined;
}
