import { OptimisticLockError } from '@mikro-orm/core';

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

/** Node's socket errors: the database host cannot be reached or dropped the connection. */
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNABORTED']);

/** What `pg` and `pg-pool` throw (plain Errors without a code) when a connection is lost or cannot be had. */
const CONNECTION_MESSAGES = [
  /^Connection terminated/i,
  /timeout exceeded when trying to connect/i,
  /is not queryable/i,
  /^Connection ended/i,
];

/** The error and what it wraps (`cause`, an AggregateError's `errors`), at most a few levels deep. */
function chain(error: unknown): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  const queue: unknown[] = [error];
  while (queue.length && out.length < 10) {
    const e = queue.shift();
    if (!e || typeof e !== 'object') continue;
    const r = e as Record<string, unknown>;
    out.push(r);
    if (r.cause) queue.push(r.cause);
    if (Array.isArray(r.errors)) queue.push(...r.errors);
  }
  return out;
}

/** The SQLSTATE of a database error, whether MikroORM wrapped it or the driver threw it. */
export function sqlStateOf(error: unknown): string | undefined {
  for (const e of chain(error)) {
    const state = typeof e.sqlState === 'string' ? e.sqlState : e.code;
    // Only errors PostgreSQL sent carry a severity; that tells a SQLSTATE from other 5-letter codes.
    if (typeof state === 'string' && /^[0-9A-Z]{5}$/.test(state) && (typeof e.severity === 'string' || typeof e.sqlState === 'string')) {
      return state;
    }
  }
  return undefined;
}

/** A serialization failure or deadlock: the transaction may succeed when run again. */
export function isTransientConflict(error: unknown): boolean {
  const state = sqlStateOf(error);
  return state === '40001' || state === '40P01';
}

/** The database cannot be reached, refused the connection, or dropped it (outage, restart, pool wait exceeded). */
export function isConnectionFailure(error: unknown): boolean {
  const state = sqlStateOf(error);
  // 08: connection exception; 57P01-57P03: shutting down or starting up; 53: out of connections/resources.
  if (state && (state.startsWith('08') || state === '57P01' || state === '57P02' || state === '57P03' || state.startsWith('53'))) return true;
  return chain(error).some((e) => {
    if (typeof e.code === 'string' && SOCKET_CODES.has(e.code)) return true;
    return typeof e.message === 'string' && !e.severity && CONNECTION_MESSAGES.some((m) => m.test(e.message as string));
  });
}

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
    const detail = chain(error).map((e) => `${String(e.detail ?? '')} ${String(e.message ?? '')}`).join(' ');
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
