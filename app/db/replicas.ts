/**
 * Reads on hot standbys (LABDATA_DATABASE_READ_URLS), with read-your-writes per API key.
 *
 * - Every 100 ms the primary's WAL position and each standby's replay position are polled. A
 *   standby that has replayed the position the primary had at time T holds everything committed
 *   before T: its data is `now - T` old. A standby older than LABDATA_READ_MAX_LAG_MS, or one that
 *   did not answer its last poll, takes no reads.
 * - After a write, the key's fence is the primary's WAL position once the write committed
 *   (`pg_current_wal_lsn()`, read before the response goes out): until a standby has replayed
 *   that far, the key reads on the primary. The fence reaches the other instances as a
 *   notification on the primary (`labdata_read_fence`), which their auth listener applies before
 *   it lets the key's next request in (app/http/auth-cache.ts, the barrier): every instance
 *   honours it from the next request on.
 * - A read that a standby fails to serve (stopped, restarting, a recovery conflict, no answer in
 *   time) is run again on the primary: a client never sees a standby's trouble.
 * - Authentication and permission facts (keys, roles, statuses) are never read on a standby: only
 *   the operation's own reads are routed (`read`), after the key was checked on the primary.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import pg from 'pg';
import type { FastifyBaseLogger } from 'fastify';
import { isConnectionFailure, sqlStateOf } from '../../core/db/errors.ts';
import { readRouting, type NativePool } from '../../core/db/sql.ts';

export const FENCE_CHANNEL = 'labdata_read_fence';
const POLL_MS = 100;
/** Longest a standby may take to answer a read before it is run on the primary instead. */
const STANDBY_QUERY_MS = 2_000;
/** How long the primary's positions are remembered (older ones date no standby within the lag bound). */
const HISTORY_MS = 60_000;
/** Fences are dropped once every standby passed them, or after this long and the lag bound (a standby that never catches up takes no reads anyway). */
const FENCE_MS = 60_000;

/** `0/16B3748` as a number that orders (PostgreSQL's pg_lsn text). */
export function lsn(text: string): bigint {
  const [hi, lo] = text.split('/');
  return (BigInt(`0x${hi}`) << 32n) + BigInt(`0x${lo}`);
}

export interface StandbyStatus {
  name: string;
  /** Whether it answered its last poll. */
  up: boolean;
  /** How old its data is, ms (null: unknown, or older than what is remembered). */
  lagMs: number | null;
  /** Whether it takes reads now. */
  serving: boolean;
}

interface Standby {
  name: string;
  pool: pg.Pool;
  up: boolean;
  replayed: bigint;
  /** When the primary's position it has replayed was current (ms since the epoch). */
  freshAt: number | undefined;
  polledAt: number;
}

/** Metrics: operations whose reads went to a target (`primary`, `standby1` ...), and reads a standby failed that the primary served. */
export interface ReadCounters {
  read(target: string): void;
  fallback(reason: string): void;
}

/** The standby an operation's reads go to (one store for every app in the process: tests run several). */
const current = new AsyncLocalStorage<NativePool>();
readRouting.pool = () => current.getStore();

export class ReadReplicas {
  readonly #primary: NativePool;
  readonly #maxLagMs: number;
  readonly #log: FastifyBaseLogger | undefined;
  readonly #standbys: Standby[];
  readonly #history: { at: number; lsn: bigint }[] = [];
  readonly #fences = new Map<string, { lsn: bigint; at: number }>();
  #timer: NodeJS.Timeout | undefined;
  #next = 0;
  #polling = false;
  counters: ReadCounters = { read: () => {}, fallback: () => {} };

  readonly #sync: () => Promise<boolean>;

  /**
   * `sync`: resolves true once every fence notified before the call is known here (the auth
   * listener's barrier), false when the listener is down: fences may be missing, reads stay on
   * the primary.
   */
  constructor(opts: { primary: NativePool; urls: string[]; maxLagMs: number; sync: () => Promise<boolean>; log?: FastifyBaseLogger }) {
    this.#primary = opts.primary;
    this.#sync = opts.sync;
    this.#maxLagMs = opts.maxLagMs;
    this.#log = opts.log;
    this.#standbys = opts.urls.map((url, i) => ({
      name: `standby${i + 1}`,
      // The service's session settings (core/db/orm.ts); a hung standby is given up on quickly.
      pool: new pg.Pool({
        connectionString: url,
        max: 10,
        connectionTimeoutMillis: STANDBY_QUERY_MS,
        query_timeout: STANDBY_QUERY_MS,
        options: '-c plan_cache_mode=force_generic_plan -c max_parallel_workers_per_gather=0 -c jit=off',
      }),
      up: false,
      replayed: 0n,
      freshAt: undefined,
      polledAt: 0,
    }));
    for (const s of this.#standbys) s.pool.on('error', () => {}); // an idle client's lost connection: the next poll says so
  }

  async start(): Promise<void> {
    await this.#poll();
    this.#timer = setInterval(() => void this.#poll(), POLL_MS);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    await Promise.all(this.#standbys.map((s) => s.pool.end().catch(() => {})));
  }

  /** Runs an operation's reads on a standby that may serve this key now, else on the primary. */
  async read<T>(keyId: string, run: () => Promise<T>): Promise<T> {
    const standby = (await this.#sync()) ? this.#choose(keyId) : undefined;
    this.counters.read(standby?.name ?? 'primary');
    return standby ? current.run(this.#onStandby(standby), run) : run();
  }

  /** After a write by `keyId`: its fence, here and (by notification) on every instance. */
  async wrote(keyId: string): Promise<void> {
    const { rows } = await this.#primary.query({
      text: `select pg_current_wal_lsn()::text as lsn, pg_notify('${FENCE_CHANNEL}', $1 || ' ' || pg_current_wal_lsn()::text)`,
      values: [keyId],
    });
    this.fence(keyId, (rows[0] as { lsn: string }).lsn);
  }

  /** A fence heard from another instance (`keyId lsn`), or set here. */
  fence(keyId: string, position: string): void {
    const value = lsn(position);
    const existing = this.#fences.get(keyId);
    if (!existing || existing.lsn < value) this.#fences.set(keyId, { lsn: value, at: Date.now() });
  }

  /** For the notification listener: a fence's payload. */
  fenceMessage(payload: string): void {
    const [keyId, position] = payload.split(' ');
    if (keyId && position) this.fence(keyId, position);
  }

  status(): StandbyStatus[] {
    const now = Date.now();
    return this.#standbys.map((s) => {
      const lagMs = s.up && s.freshAt !== undefined ? now - s.freshAt : null;
      return { name: s.name, up: s.up, lagMs, serving: this.#fresh(s, now) };
    });
  }

  #fresh(s: Standby, now: number): boolean {
    return s.up && s.freshAt !== undefined && now - s.freshAt <= this.#maxLagMs && now - s.polledAt <= this.#maxLagMs;
  }

  #choose(keyId: string): Standby | undefined {
    const now = Date.now();
    const fence = this.#fences.get(keyId);
    for (let i = 0; i < this.#standbys.length; i++) {
      const s = this.#standbys[(this.#next + i) % this.#standbys.length];
      if (!this.#fresh(s, now) || (fence && s.replayed < fence.lsn)) continue;
      this.#next = (this.#next + i + 1) % this.#standbys.length;
      return s;
    }
    return undefined;
  }

  /** The standby as a pool whose failures are the primary's to answer. */
  #onStandby(s: Standby): NativePool {
    return {
      query: async (config) => {
        try {
          return await s.pool.query(config);
        } catch (err) {
          const state = sqlStateOf(err);
          // 40001: cancelled by a conflict with recovery; 57014: our own timeout; 25006: not a standby any more.
          const standbyTrouble = isConnectionFailure(err) || state === '40001' || state === '57014' || state === '25006' || /timeout/i.test(String((err as Error).message));
          if (!standbyTrouble) throw err;
          if (isConnectionFailure(err)) s.up = false;
          this.counters.fallback(state === '40001' ? 'conflict' : 'unavailable');
          return this.#primary.query(config);
        }
      },
    };
  }

  async #poll(): Promise<void> {
    if (this.#polling) return;
    this.#polling = true;
    try {
      const at = Date.now();
      try {
        const { rows } = await this.#primary.query({ text: 'select pg_current_wal_lsn()::text as lsn', values: [] });
        this.#history.push({ at, lsn: lsn((rows[0] as { lsn: string }).lsn) });
      } catch {
        // The primary does not answer: reads stay where they are until it does.
      }
      while (this.#history.length > 2 && this.#history[0].at < at - HISTORY_MS) this.#history.shift();
      await Promise.all(this.#standbys.map((s) => this.#pollStandby(s)));
      this.#forget(at);
    } finally {
      this.#polling = false;
    }
  }

  async #pollStandby(s: Standby): Promise<void> {
    try {
      const { rows } = await s.pool.query('select pg_last_wal_replay_lsn()::text as lsn, pg_is_in_recovery() as recovering');
      const row = rows[0] as { lsn: string | null; recovering: boolean };
      if (!row.recovering || !row.lsn) throw new Error('not a standby (promoted, or not replaying)');
      s.replayed = lsn(row.lsn);
      // The latest position the primary had that the standby has replayed: it is as fresh as then.
      let freshAt: number | undefined;
      for (let i = this.#history.length - 1; i >= 0; i--) {
        if (this.#history[i].lsn <= s.replayed) {
          freshAt = this.#history[i].at;
          break;
        }
      }
      if (!s.up) this.#log?.info({ standby: s.name }, 'standby answers: reads may go there');
      s.up = true;
      s.freshAt = freshAt;
      s.polledAt = Date.now();
    } catch (err) {
      if (s.up) this.#log?.warn({ standby: s.name, reason: (err as Error).message }, 'standby does not answer: its reads go to the primary');
      s.up = false;
    }
  }

  #forget(now: number): void {
    const passed = this.#standbys.length ? this.#standbys.reduce((min, s) => (s.replayed < min ? s.replayed : min), this.#standbys[0].replayed) : 0n;
    for (const [keyId, fence] of this.#fences) {
      // A standby that has not replayed a fence has data older than the fence, so once the fence
      // is older than the lag bound no standby it would hold back takes reads anyway.
      if (fence.lsn <= passed || now - fence.at > Math.max(FENCE_MS, this.#maxLagMs + POLL_MS * 10)) this.#fences.delete(keyId);
    }
  }
}
