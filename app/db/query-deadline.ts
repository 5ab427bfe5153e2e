import type { EventEmitter } from 'node:events';
import type { Orm } from '../../core/db/orm.ts';
import { openConnections } from '../../core/db/pool-guard.ts';

/** The parts of a `pg` client the deadline reads and ends. */
interface Connection extends EventEmitter {
  /** The query pg has sent and awaits the answer of, if any (pg 8.23 `Client`; its public getter is deprecated). */
  _activeQuery?: object | null;
  connection?: { stream?: { destroy(err?: Error): void } };
}

/**
 * Requests are served with this bound on every query (`limitQueryTime`): a database that stops
 * answering turns into 503s, not requests that wait for ever. Far above any query a request
 * makes at the sizes the bench seeds; migrations and `labdata recount` run without it.
 */
export const REQUEST_QUERY_DEADLINE_MS = 5_000;
/** How often the deadline is checked: a hung query ends between `ms` and `ms` + twice this. */
const SWEEP_MS = 1_000;
/** The deadline of each pool being swept. */
const deadlines = new WeakMap<EventEmitter, { ms: number }>();

/**
 * Ends a `pg` connection the database stopped answering on: its socket is destroyed with
 * ETIMEDOUT, so what waits on it fails as "database unavailable" (app/http/database-failure.ts) and its
 * `end` handlers run (a pool gives the slot back, a listener reconnects).
 */
export function abandonConnection(client: object, reason: string): void {
  (client as Connection).connection?.stream?.destroy(Object.assign(new Error(reason), { code: 'ETIMEDOUT' }));
}

/**
 * A database that keeps the connection open and never answers (a frozen server, a network path
 * that drops packets) would hold a query, and its request, for ever. From now on, a query of
 * `orm`'s pool (guarded by core/db/pool-guard.ts) unanswered for `ms` ends its connection with
 * ETIMEDOUT: the request fails as "database unavailable" (503) and the slot is given back as for
 * a lost connection.
 */
export async function limitQueryTime(orm: Orm, ms = REQUEST_QUERY_DEADLINE_MS): Promise<void> {
  const pool = (await orm.em.getConnection().getNativeClient()) as unknown as EventEmitter;
  const clients = openConnections(pool);
  if (!clients) throw new Error('limitQueryTime: the pool was not created with guardPool');
  const deadline = deadlines.get(pool);
  if (deadline) deadline.ms = ms;
  else if (ms > 0) {
    const set = { ms };
    deadlines.set(pool, set);
    sweep(clients as ReadonlySet<Connection>, set);
  }
}

/**
 * Nothing on the hot path (wrapping every query cost CPU and garbage that showed in the bench):
 * once a second, each open connection's query in flight (pg's `_activeQuery`) is compared with
 * the one seen before; the same one for longer than the deadline ends the connection. Only pools
 * given a deadline (the server's) are swept.
 */
function sweep(clients: ReadonlySet<Connection>, deadline: { ms: number }): void {
  const seen = new WeakMap<Connection, { query: object; since: number }>();
  setInterval(() => {
    if (deadline.ms <= 0) return;
    const now = Date.now();
    for (const client of clients) {
      const query = client._activeQuery;
      const before = seen.get(client);
      if (!query) seen.delete(client);
      else if (before?.query !== query) seen.set(client, { query, since: now });
      else if (now - before.since > deadline.ms) {
        seen.delete(client);
        abandonConnection(client, `the database did not answer within ${deadline.ms / 1000} s`);
      }
    }
  }, SWEEP_MS).unref();
}
