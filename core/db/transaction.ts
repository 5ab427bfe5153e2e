import { AsyncLocalStorage } from 'node:async_hooks';
import type { EntityManager, IsolationLevel } from '@mikro-orm/postgresql';
import { ConflictError } from '../errors.ts';
import { isConnectionFailure, isTransientConflict } from './errors.ts';

/**
 * Thrown inside a write transaction when what it locked is no longer what it read before
 * locking (the record moved meanwhile): the transaction is rolled back and run again. Should
 * every attempt see that, the caller gets the 409 it is.
 */
export class RestartTransaction extends ConflictError {
  constructor() {
    super('The records changed while the request ran; try again');
  }
}

export interface WriteTransactionOptions {
  /** Runs in all (default 5); the last failure is thrown (a 409 through app/http/database-failure.ts). */
  attempts?: number;
  /** READ COMMITTED unless given (a recount counts in one REPEATABLE READ snapshot). */
  isolationLevel?: IsolationLevel;
}

const BASE_DELAY_MS = 5;
const MAX_DELAY_MS = 200;

/** Full jitter on an exponential backoff: retries of colliding transactions spread out. */
function backoff(attempt: number): Promise<void> {
  const ceiling = Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** attempt);
  return new Promise((resolve) => setTimeout(resolve, Math.random() * ceiling));
}

/** Checks a write must pass inside its own transaction (an `If-Match`), by the request's EntityManager. */
const preconditions = new WeakMap<EntityManager, (em: EntityManager) => Promise<void>>();

/** Statements every write transaction on the request's EntityManager runs first (an `Idempotency-Key` claim). */
const companions = new WeakMap<EntityManager, (em: EntityManager) => Promise<void>>();

/**
 * Makes every write transaction run on `em` start with `first` (app/http/idempotency.ts marks
 * its key applied there): whatever `first` writes commits or rolls back with the write.
 */
export function startEachWriteWith(em: EntityManager, first: (em: EntityManager) => Promise<void>): void {
  companions.set(em, first);
}

/** The check of the attempt running in this async context, until the write has locked its record. */
const pending = new AsyncLocalStorage<{ check?: (em: EntityManager) => Promise<void> }>();

/**
 * Makes the next write transaction run on `em` check `check` (app/http/conditional.ts,
 * `If-Match`) inside the transaction: first thing, and again once the write has locked the
 * record it changes (`recordLocked`). From that lock to the commit no other writer changes the
 * record, and at READ COMMITTED every statement after the lock sees what committed before it
 * (children created, activity written while the write waited): so the condition still holds at
 * commit, and the write acts on the current rows. (A REPEATABLE READ snapshot, taken before the
 * lock wait, would miss those rows: a delete would orphan them, a move leave them behind.)
 */
export function requirePrecondition(em: EntityManager, check: (em: EntityManager) => Promise<void>): void {
  preconditions.set(em, check);
}

/**
 * Called by a write right after it has locked the row(s) that serialize the writers of the
 * record it changes: runs the pending `If-Match` check, once (nothing pending: nothing to do).
 * `lockLocated` calls it for the rows it locks `for update`.
 */
export async function recordLocked(em: EntityManager): Promise<void> {
  const store = pending.getStore();
  const check = store?.check;
  if (!check) return;
  store.check = undefined;
  await check(em);
}

/**
 * Runs `work` in one transaction and runs it again, a bounded number of times with jitter,
 * when PostgreSQL reports a serialization failure (40001) or a deadlock (40P01), or when `work`
 * asks for it (`RestartTransaction`). Callers never see a transient conflict unless every
 * attempt hit one. Each attempt starts from an empty identity map, so nothing read by a failed
 * attempt leaks into the next. Inside an outer transaction it only opens a savepoint: the outer
 * transaction is the one to retry.
 */
export async function writeTransaction<T>(em: EntityManager, work: (em: EntityManager) => Promise<T>, options: WriteTransactionOptions = {}): Promise<T> {
  if (em.isInTransaction()) return em.transactional(work);
  const attempts = Math.max(1, options.attempts ?? 5);
  // Only the request's first transaction checks: a later one continues the write the check let in
  // (and may find the record changed by the first).
  const check = preconditions.get(em);
  preconditions.delete(em);
  const checked = check ? (tx: EntityManager) => pending.run({ check }, async () => (await check(tx), work(tx))) : work;
  const first = companions.get(em);
  const run = first ? async (tx: EntityManager) => (await first(tx), checked(tx)) : checked;
  for (let attempt = 1; ; attempt++) {
    try {
      return await em.transactional(run, { clear: true, isolationLevel: options.isolationLevel });
    } catch (err) {
      const retryable = err instanceof RestartTransaction || isTransientConflict(err);
      if (!retryable || attempt >= attempts) throw err;
      await backoff(attempt);
    }
  }
}

/**
 * Reads the answer of a write that has committed, again a few times (for about 3 s) when the
 * database drops the connection meanwhile: the write stands, so a 503 would wrongly tell the
 * client that nothing was done. A database that does not answer at all has used up that time in
 * one attempt (the pool's query deadline): no retry then, the 503 comes at once.
 */
export async function readAfterCommit<T>(read: () => Promise<T>, attempts = 5): Promise<T> {
  const until = Date.now() + 3_000;
  for (let attempt = 1; ; attempt++) {
    try {
      return await read();
    } catch (err) {
      if (attempt >= attempts || Date.now() > until || !isConnectionFailure(err)) throw err;
      await new Promise((resolve) => setTimeout(resolve, 100 * 2 ** attempt));
    }
  }
}
