import type { EntityManager } from '@mikro-orm/postgresql';
import { ConflictError } from '../errors.ts';
import { isTransientConflict } from './errors.ts';

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
  /** Runs in all (default 5); the last failure is thrown (a 409 through core/db/errors.ts). */
  attempts?: number;
}

const BASE_DELAY_MS = 5;
const MAX_DELAY_MS = 200;

/** Full jitter on an exponential backoff: retries of colliding transactions spread out. */
function backoff(attempt: number): Promise<void> {
  const ceiling = Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** attempt);
  return new Promise((resolve) => setTimeout(resolve, Math.random() * ceiling));
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
  for (let attempt = 1; ; attempt++) {
    try {
      return await em.transactional(work, { clear: true });
    } catch (err) {
      const retryable = err instanceof RestartTransaction || isTransientConflict(err);
      if (!retryable || attempt >= attempts) throw err;
      await backoff(attempt);
    }
  }
}
