import type { EventEmitter } from 'node:events';

/** The parts of a `pg` pool client this guard touches. */
interface PooledClient extends EventEmitter {
  release?: (err?: Error | boolean) => void;
  /** The query pg has sent and awaits the answer of, if any (pg 8.23 `Client`; its public getter is deprecated). */
  _activeQuery?: object | null;
  connection?: { stream?: { destroy(err?: Error): void } };
}

/** How often the deadline is checked: a hung query ends between `ms` and `ms` + twice this. */
const SWEEP_MS = 1_000;
/** Per pool: its open connections, and how long a query may go unanswered on one (0: no limit). */
interface Guard {
  clients: Set<PooledClient>;
  ms: number;
  sweeping: boolean;
}
const guards = new WeakMap<EventEmitter, Guard>();

/**
 * Guards a `pg` pool (MikroORM's `onPoolCreated`) against connections that are lost or hang.
 *
 * Lost: Kysely's controlled transaction (under MikroORM 7) releases its connection only after a
 * successful BEGIN, COMMIT or ROLLBACK. When the database drops connections (a crashed backend,
 * a restart), BEGIN fails, or COMMIT and then ROLLBACK fail, and the connection is never
 * released: each such transaction takes one of the pool's slots forever, and once all are gone
 * every request waits for a connection and answers 503 although the database is back. So a
 * checked-out client whose connection has ended is released with an error (pg-pool then
 * discards it and opens a new one when asked), and a holder's later release of it is a no-op
 * instead of pg-pool's double-release error.
 *
 * Hung: a database that keeps the connection open and never answers (a frozen server, a
 * network path that drops packets) would hold a query, and its request, for ever. Once a
 * deadline is set (`setQueryDeadline`), a query unanswered for that long ends its connection
 * with ETIMEDOUT: the request fails as "database unavailable" (503, core/db/errors.ts) and the
 * slot is given back as for a lost connection.
 */
export function guardPool(pool: EventEmitter): void {
  const clients = new Set<PooledClient>();
  guards.set(pool, { clients, ms: 0, sweeping: false });
  pool.on('remove', (client: PooledClient) => clients.delete(client));

  pool.on('connect', (client: PooledClient) => {
    clients.add(client);
    let release: ((err?: Error | boolean) => void) | undefined;
    let released = true;
    const once = (err?: Error | boolean) => {
      if (released) return;
      released = true;
      release!(err);
    };
    // pg-pool assigns `client.release` on every checkout: keep its function, hand out `once`.
    Object.defineProperty(client, 'release', {
      configurable: true,
      get: () => once,
      set: (fn: (err?: Error | boolean) => void) => {
        release = fn;
        released = false;
      },
    });
    client.on('end', () => {
      clients.delete(client);
      once(new Error('the database connection ended while checked out'));
    });
  });
}

/**
 * Ends a `pg` connection the database stopped answering on: its socket is destroyed with
 * ETIMEDOUT, so what waits on it fails as "database unavailable" (core/db/errors.ts) and its
 * `end` handlers run (a pool gives the slot back, a listener reconnects).
 */
export function abandonConnection(client: object, reason: string): void {
  (client as PooledClient).connection?.stream?.destroy(Object.assign(new Error(reason), { code: 'ETIMEDOUT' }));
}

/** From now on, a query of `pool`'s unanswered for `ms` ends its connection (see `guardPool`). */
export function setQueryDeadline(pool: EventEmitter, ms: number): void {
  const guard = guards.get(pool);
  if (!guard) throw new Error('setQueryDeadline: the pool was not created with guardPool');
  guard.ms = ms;
  if (!guard.sweeping && ms > 0) {
    guard.sweeping = true;
    sweep(guard);
  }
}

/**
 * Nothing on the hot path (wrapping every query cost CPU and garbage that showed in the bench):
 * once a second, each open connection's query in flight (pg's `_activeQuery`) is compared with
 * the one seen before; the same one for longer than the deadline ends the connection. Only pools
 * given a deadline (the server's) are swept.
 */
function sweep(guard: Guard): void {
  const seen = new WeakMap<PooledClient, { query: object; since: number }>();
  setInterval(() => {
    if (guard.ms <= 0) return;
    const now = Date.now();
    for (const client of guard.clients) {
      const query = client._activeQuery;
      const before = seen.get(client);
      if (!query) seen.delete(client);
      else if (before?.query !== query) seen.set(client, { query, since: now });
      else if (now - before.since > guard.ms) {
        seen.delete(client);
        abandonConnection(client, `the database did not answer within ${guard.ms / 1000} s`);
      }
    }
  }, SWEEP_MS).unref();
}
