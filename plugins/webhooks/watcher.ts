import { db, type EntityManager, sql } from '../../core/public.ts';
import type { Positions } from './pipeline.ts';

/** How often a process asks for new positions while some request waits (`wait` on the change feed). */
const POLL_MS = 200;

interface Waiter {
  organizationId: string;
  after: number;
  wake(): void;
}

/**
 * Tells waiting change-feed requests that their organization has new changes. One query per
 * process every POLL_MS while anyone waits (the new positions per organization, read from the
 * change log's primary key past the last one seen), however many wait, and none otherwise; the
 * sequencer running in this process reports its positions at once. (LISTEN/NOTIFY would need a
 * session of its own, which PgBouncer in transaction mode does not keep.)
 */
export class ChangeWatcher {
  readonly #latest = new Map<string, number>();
  readonly #waiters = new Set<Waiter>();
  /** The highest position read by the poll; undefined when not polling (read afresh on start). */
  #seen: number | undefined;
  #polling: Promise<void> | undefined;
  #nudge: (() => void) | undefined;

  /** The sequencer of this process numbered these. */
  advanced(positions: Positions): void {
    for (const [org, last] of positions) this.#raise(org, last);
    this.#nudge?.();
  }

  /**
   * Starts waiting for a position above `after` in the organization (registered at once, so a
   * change between the caller's last read and its next cannot be missed). `next` resolves true
   * when one may have come, false when `ms` pass or `signal` aborts.
   */
  subscribe(em: EntityManager, organizationId: string, after: number): { ready: Promise<void>; next(ms: number, signal?: AbortSignal): Promise<boolean>; close(): void } {
    let woken = false;
    let resolveNext: ((value: boolean) => void) | undefined;
    const waiter: Waiter = {
      organizationId,
      after,
      wake: () => {
        woken = true;
        resolveNext?.(true);
      },
    };
    this.#waiters.add(waiter);
    const ready = this.#start(em);
    return {
      ready,
      next: (ms, signal) => {
        if (woken || (this.#latest.get(organizationId) ?? 0) > waiter.after) return Promise.resolve(true);
        if (signal?.aborted) return Promise.resolve(false);
        return new Promise<boolean>((resolve) => {
          const done = (value: boolean) => {
            clearTimeout(timer);
            signal?.removeEventListener('abort', aborted);
            resolveNext = undefined;
            resolve(value);
          };
          const aborted = () => done(false);
          const timer = setTimeout(() => done(false), ms);
          signal?.addEventListener('abort', aborted, { once: true });
          resolveNext = done;
        });
      },
      close: () => {
        this.#waiters.delete(waiter);
      },
    };
  }

  #raise(org: string, last: number): void {
    if (last <= (this.#latest.get(org) ?? 0)) return;
    this.#latest.set(org, last);
    for (const w of this.#waiters) if (w.organizationId === org && last > w.after) w.wake();
  }

  /** Resolves once the poll knows where the log ends (so later changes are reported). */
  #start(em: EntityManager, again = false): Promise<void> {
    if (this.#polling) return this.#initialized;
    let initialized!: () => void;
    this.#initialized = new Promise<void>((resolve) => (initialized = resolve));
    this.#polling = this.#poll(em, initialized, again).finally(() => {
      this.#polling = undefined;
      // Someone began to wait as the poll ended: poll again.
      if (this.#waiters.size) void this.#start(em, true);
    });
    return this.#initialized;
  }

  #initialized: Promise<void> = Promise.resolve();

  async #poll(em: EntityManager, initialized: () => void, again: boolean): Promise<void> {
    try {
      const [{ last }] = await db.query<{ last: string }>(em, sql`select coalesce(max(position), 0) as last from webhook_change`);
      this.#seen = Number(last);
    } catch {
      // Waiters then only time out, or hear of this process's own sequencer.
    } finally {
      initialized();
    }
    // Started again for those who began to wait as the last poll ended: they read once more (a
    // change between their read and this poll's start would not be reported).
    if (again) for (const w of this.#waiters) w.wake();
    while (this.#waiters.size) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, POLL_MS);
        this.#nudge = () => (clearTimeout(timer), resolve());
      });
      this.#nudge = undefined;
      if (!this.#waiters.size) break;
      try {
        if (this.#seen === undefined) {
          const [{ last }] = await db.query<{ last: string }>(em, sql`select coalesce(max(position), 0) as last from webhook_change`);
          this.#seen = Number(last);
          for (const w of this.#waiters) w.wake();
          continue;
        }
        const rows = await db.query<{ organization_id: string; last: string }>(
          em,
          sql`select organization_id, max(position) as last from webhook_change where position > ${this.#seen} group by organization_id`,
        );
        for (const r of rows) {
          const last = Number(r.last);
          if (last > this.#seen) this.#seen = last;
          this.#raise(r.organization_id, last);
        }
      } catch {
        // The database is away: try again at the next tick.
      }
    }
    this.#seen = undefined;
  }
}
