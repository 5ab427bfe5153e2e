// What kind of failure a database error is: its SQLSTATE, a transient conflict, a lost connection.
// What each means to a client (a status) is app/http/database-failure.ts's.

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
export function errorChain(error: unknown): Record<string, unknown>[] {
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
  for (const e of errorChain(error)) {
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
  return errorChain(error).some((e) => {
    if (typeof e.code === 'string' && SOCKET_CODES.has(e.code)) return true;
    return typeof e.message === 'string' && !e.severity && CONNECTION_MESSAGES.some((m) => m.test(e.message as string));
  });
}
