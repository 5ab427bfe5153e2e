import type { EventEmitter } from 'node:events';

/** The parts of a `pg` pool client this guard touches. */
interface PooledClient extends EventEmitter {
  release?: (err?: Error | boolean) => void;
}

/**
 * Gives back pool slots that a lost connection would otherwise hold for good.
 *
 * Kysely's controlled transaction (under MikroORM 7) releases its connection only after a
 * successful BEGIN, COMMIT or ROLLBACK. When the database drops connections (a crashed backend,
 * a restart), BEGIN fails, or COMMIT and then ROLLBACK fail, and the connection is never
 * released: each such transaction takes one of the pool's slots forever, and once all are gone
 * every request waits for a connection and answers 503 although the database is back.
 *
 * So: a checked-out client whose connection has ended is released with an error (pg-pool then
 * discards it and opens a new one when asked), and a holder's later release of it is a no-op
 * instead of pg-pool's double-release error.
 */
export function releaseLostConnections(pool: EventEmitter): void {
  pool.on('connect', (client: PooledClient) => {
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
    client.on('end', () => once(new Error('the database connection ended while checked out')));
  });
}
