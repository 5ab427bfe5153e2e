import type { EventEmitter } from 'node:events';

/** The part of a `pg` pool client this guard touches. */
interface PooledClient extends EventEmitter {
  release?: (err?: Error | boolean) => void;
}

/** Per guarded pool: its open connections (app/db/query-deadline.ts watches their queries). */
const poolClients = new WeakMap<EventEmitter, ReadonlySet<EventEmitter>>();

/**
 * Guards a `pg` pool (MikroORM's `onPoolCreated`) against lost connections. Kysely's controlled
 * transaction (under MikroORM 7) releases its connection only after a successful BEGIN, COMMIT
 * or ROLLBACK. When the database drops connections (a crashed backend,
 * a restart), BEGIN fails, or COMMIT and then ROLLBACK fail, and the connection is never
 * released: each such transaction takes one of the pool's slots forever, and once all are gone
 * every request waits for a connection and answers 503 although the database is back. So a
 * checked-out client whose connection has ended is released with an error (pg-pool then
 * discards it and opens a new one when asked), and a holder's later release of it is a no-op
 * instead of pg-pool's double-release error. (A hung connection: app/db/query-deadline.ts.)
 */
export function guardPool(pool: EventEmitter): void {
  const clients = new Set<PooledClient>();
  poolClients.set(pool, clients);
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

/** The open connections of a pool `guardPool` guards (undefined for any other pool). */
export function openConnections(pool: EventEmitter): ReadonlySet<EventEmitter> | undefined {
  return poolClients.get(pool);
}
