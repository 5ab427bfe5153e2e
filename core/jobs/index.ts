/**
 * The durable job queue (kernel service `services.jobs`), on pg-boss (PostgreSQL-backed).
 *
 * API for plugins:
 *   - `jobs.define(plugin, { name, handler, retryLimit?, retryDelaySeconds?, retryBackoff?, expireInSeconds?, group?, onFailed? })`
 *     in `setup`: a job type. `handler(ctx, payload)` runs in a worker; throwing retries it (with
 *     backoff) until `retryLimit` retries are used up, then `onFailed(ctx, payload, reason)` runs once.
 *     A handler must be idempotent: a job whose process died mid-run runs again once its
 *     heartbeat is stale (`heartbeatSeconds`, 20 s by default), on any instance.
 *   - `jobs.limit(group, n)` in `setup`: at most `n` handlers of a concurrency group (a vendor;
 *     a definition's group defaults to its plugin) run at once in this process.
 *   - `jobs.enqueue(em, name, payload, opts?)` INSIDE the write's transaction
 *     (`em.transactional(async (em) => ...)`): the job row is written on the transaction's own
 *     connection, so a job exists if and only if the transaction commits.
 *
 * The runtime (server, CLI `migrate`, tests) attaches pg-boss with `start(...)`; workers run only
 * where asked (`workers: true`), and `stop()` ends them before the pool closes.
 *
 * Throughput: each queue has several workers (at most `concurrency`, or its group's limit); a
 * committed job wakes them through LISTEN/NOTIFY, a worker that got a job wakes its idle siblings
 * and fetches again at once, so a backlog drains at full concurrency instead of one job per poll.
 * Every handler also takes a slot of the process-wide limiter, so `concurrency` bounds the whole
 * process however many queues there are.
 */
import type { Db as IDatabase, JobWithMetadata, KyselyTransactionLike, PgBoss } from 'pg-boss';

/**
 * pg-boss (with its ~130 modules) is loaded by `start`: admin commands that never run or queue
 * jobs (keys, roles, recount) do not pay for it.
 */
let pgBoss: typeof import('pg-boss') | undefined;
import type { EntityManager } from '@mikro-orm/postgresql';
import type { FastifyBaseLogger } from 'fastify';
import type { Orm } from '../db/orm.ts';
import { Limiter } from './limiter.ts';
import { isConnectionFailure } from '../db/errors.ts';
import { Startup } from '../kernel/startup.ts';

/**
 * What a job handler gets: its own EntityManager (no request, no transaction), services, log.
 * `S` is the kernel services (KernelServices): a parameter, so that the queue does not import
 * the services that hold it (no import circle).
 */
export interface JobContext<S = unknown> {
  em: EntityManager;
  services: S;
  log: FastifyBaseLogger;
  jobId: string;
  /** 1 on the first run, 2 on the first retry, ... */
  attempt: number;
  /** Aborted when the worker stops (shutdown): long handlers may give up early. */
  signal: AbortSignal;
}

export interface JobDefinition<P extends object = any, S = unknown> {
  /** Queue name: letters, digits, `_ . - /` (e.g. `provisioning.storage.create-folder`). */
  name: string;
  handler(ctx: JobContext<S>, payload: P): Promise<void>;
  /** Retries after the first run (default 5). */
  retryLimit?: number;
  /** Delay before the first retry, seconds (default 2); doubled for each retry with `retryBackoff`. */
  retryDelaySeconds?: number;
  /** Exponential backoff with jitter (default true). */
  retryBackoff?: boolean;
  /** A run still going after this long is stopped and retried (a hung handler; default 300). */
  expireInSeconds?: number;
  /** Concurrency group for `jobs.limit` (default: the defining plugin, i.e. its vendor). */
  group?: string;
  /** Runs once when retries are exhausted (including a last run that never finished). */
  onFailed?(ctx: JobContext<S>, payload: P, reason: string): Promise<void>;
}

export interface EnqueueOptions {
  /** Run no earlier than this many seconds from now. */
  startAfterSeconds?: number;
}

/** Tuning for the runtime; tests make everything fast. */
export interface JobQueueOptions<S = unknown> {
  url: string;
  orm: Orm;
  services: S;
  log: FastifyBaseLogger;
  /** Run workers in this process (server, tests with jobs). */
  workers?: boolean;
  /** Multiplies every retry delay (0 in tests: retry at once). Default 1. */
  retryDelayScale?: number;
  /** Overrides every definition's expireInSeconds (tests of a killed process). */
  expireInSeconds?: number;
  /** Worker poll interval, seconds (default 2; minimum 0.5): the backstop for retries coming due. */
  pollingIntervalSeconds?: number;
  /** How often pg-boss looks for dead or expired runs, seconds (default 15; minimum 1). */
  superviseIntervalSeconds?: number;
  /** Most job handlers running at once in this process (LABDATA_JOB_CONCURRENCY, default 8). */
  concurrency?: number;
  /**
   * A running job's worker refreshes its heartbeat every half of this; a run whose heartbeat is
   * older (its process died) is retried (default 20; pg-boss's minimum is 10).
   */
  heartbeatSeconds?: number;
}

export const DEFAULT_JOB_CONCURRENCY = 8;
const DEFAULT_HEARTBEAT_SECONDS = 20;
const DEFAULT_SUPERVISE_SECONDS = 15;
/** Workers beyond the first of a queue poll rarely: they are woken by NOTIFY and by their siblings. */
const SIBLING_POLLING_SECONDS = 30;

const FAILED_SUFFIX = '.failed';
const SCHEMA = 'pgboss';

export class JobQueue<S = unknown> {
  #startup: Startup;

  /** Registrations throw once `startup` has ended (a queue of its own, in tests, never freezes). */
  constructor(startup = new Startup()) {
    this.#startup = startup;
  }

  #definitions = new Map<string, JobDefinition<any, S> & { plugin: string }>();
  #boss: PgBoss | undefined;
  #options: JobQueueOptions<S> | undefined;
  #workersRunning = false;
  #active = new Set<Promise<unknown>>();
  #groupLimits = new Map<string, number>();
  #limiter = new Limiter(DEFAULT_JOB_CONCURRENCY);
  #groupLimiters = new Map<string, Limiter>();

  /** Called in a plugin's `setup`. */
  define<P extends object>(plugin: string, def: JobDefinition<P, S>): void {
    this.#startup.assertOpen(`job definition ${def.name}`);
    if (!/^[\w.\-/]+$/.test(def.name) || def.name.endsWith(FAILED_SUFFIX)) throw new Error(`invalid job name "${def.name}"`);
    const existing = this.#definitions.get(def.name);
    if (existing) throw new Error(`job ${def.name} is defined by both ${existing.plugin} and ${plugin}`);
    this.#definitions.set(def.name, { ...def, plugin } as JobDefinition<any, S> & { plugin: string });
  }

  /**
   * The per-vendor limit hook (setup): at most `limit` handlers of `group` run at once in this
   * process (still within the process-wide `concurrency`). Jobs of a group default to their plugin.
   */
  limit(group: string, limit: number): void {
    if (!Number.isInteger(limit) || limit < 1) throw new Error(`job concurrency limit of ${group} must be a positive integer`);
    this.#groupLimits.set(group, limit);
  }

  /** Whether any plugin defined a job (the runtime skips pg-boss entirely otherwise). */
  get defined(): boolean {
    return this.#definitions.size > 0;
  }

  names(): string[] {
    return [...this.#definitions.keys()];
  }

  /**
   * Adds a job in the caller's transaction. `em` must be the transactional EntityManager of the
   * write (`em.transactional(async (em) => jobs.enqueue(em, ...))`).
   */
  async enqueue(em: EntityManager, name: string, payload: object, opts: EnqueueOptions = {}): Promise<string> {
    const def = this.#definitions.get(name);
    if (!def) throw new Error(`job ${name} is not defined`);
    const boss = this.#requireBoss();
    const id = await boss.send(name, payload, {
      ...this.#retryOptions(def),
      startAfter: opts.startAfterSeconds,
      db: transactionExecutor(em),
    });
    if (!id) throw new Error(`job ${name} was not queued`);
    return id;
  }

  /**
   * Attaches pg-boss: installs or migrates its schema (`pgboss`), creates the queues, and starts
   * workers when asked. Idempotent per instance.
   */
  async start(options: JobQueueOptions<S>): Promise<void> {
    if (this.#boss) {
      if (!options.workers || this.#workersRunning) return;
      // Queue-only until now: restart with workers and supervision.
      await this.stop();
    }
    this.#options = options;
    pgBoss ??= await import('pg-boss');
    const boss = new pgBoss.PgBoss({
      connectionString: options.url,
      schema: SCHEMA,
      // Fetches, completions and heartbeats of every worker share this pool (handlers use the ORM's).
      max: 6,
      migrate: true,
      // Supervision (expiry of runs of killed processes, maintenance) where workers run.
      supervise: options.workers ?? false,
      // Dead runs are found by this sweep: with the heartbeat, a dead worker's job is retried
      // within heartbeatSeconds + this (35 s by default), well inside a minute.
      superviseIntervalSeconds: options.superviseIntervalSeconds ?? DEFAULT_SUPERVISE_SECONDS,
      monitorIntervalSeconds: options.superviseIntervalSeconds ?? DEFAULT_SUPERVISE_SECONDS,
      schedule: false,
      // Workers LISTEN: a job committed by a request wakes them at once (polling stays the backstop).
      useListenNotify: options.workers ?? false,
      registerInstance: false,
      openTelemetry: { enabled: false },
    });
    // A database going away (an outage, a restart, a stop) is the outage's news, logged as such
    // elsewhere: a warning here, without the stack; anything else is an error.
    boss.on('error', (err) => {
      if (isConnectionFailure(err)) options.log.warn({ reason: err.message }, 'job queue: database unavailable; retrying');
      else options.log.error({ err }, 'job queue error');
    });
    this.#limiter = new Limiter(options.concurrency ?? DEFAULT_JOB_CONCURRENCY);
    this.#groupLimiters = new Map([...this.#groupLimits].map(([group, n]) => [group, new Limiter(Math.min(n, this.#limiter.limit))]));
    await boss.start();
    this.#boss = boss;
    for (const def of this.#definitions.values()) {
      const failed = def.name + FAILED_SUFFIX;
      await ensureQueue(boss, failed, { retryLimit: 5, retryDelay: 1, retryBackoff: true, notify: true });
      await ensureQueue(boss, def.name, { ...this.#retryOptions(def), deadLetter: failed, notify: true });
    }
    if (options.workers) await this.startWorkers();
  }

  async startWorkers(): Promise<void> {
    const boss = this.#requireBoss();
    if (this.#workersRunning) return;
    this.#workersRunning = true;
    for (const def of this.#definitions.values()) {
      const group = this.#groupLimiters.get(this.#group(def));
      await this.#workers(boss, def.name, group?.limit ?? this.#limiter.limit, (job) => this.#limited(group, () => this.#run(def, job)));
      // Failure notices are rare and short: one worker.
      await this.#workers(boss, def.name + FAILED_SUFFIX, 1, (job) => this.#limited(undefined, () => this.#runFailed(def, job)));
    }
  }

  /**
   * `count` workers on one queue. The first polls at the base interval (retries coming due are
   * not announced); the others poll rarely. A worker that got a job wakes every worker of its
   * queue: idle siblings fetch at once, and it fetches again itself as soon as its job is done.
   */
  async #workers(boss: PgBoss, name: string, count: number, handle: (job: JobWithMetadata<object>) => Promise<void>) {
    const base = this.#options?.pollingIntervalSeconds ?? 2;
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      const interval = i === 0 ? base : Math.max(base, SIBLING_POLLING_SECONDS);
      const options = { pollingIntervalSeconds: interval, notifyPollingIntervalSeconds: interval, includeMetadata: true, batchSize: 1 } as const;
      ids.push(
        await boss.work(name, options, (jobs: JobWithMetadata<object>[]) => {
          if (jobs.length) for (const id of ids) boss.notifyWorker(id);
          return this.#track(Promise.all(jobs.map(handle)));
        }),
      );
    }
  }

  /** Runs within the process-wide limit and the group's own, taking the group slot first. */
  async #limited(group: Limiter | undefined, fn: () => Promise<void>): Promise<void> {
    if (!group) return this.#limiter.run(fn);
    return group.run(() => this.#limiter.run(fn));
  }

  #group(def: JobDefinition<any, S> & { plugin?: string }): string {
    return def.group ?? def.plugin ?? def.name;
  }

  /**
   * Stops the workers and closes pg-boss's pool. `graceful` waits for running handlers;
   * `graceful: false` returns them to the queue at once (as failed runs, retried later).
   */
  async stop(opts: { graceful?: boolean } = {}): Promise<void> {
    const boss = this.#boss;
    if (!boss) return;
    this.#boss = undefined;
    this.#workersRunning = false;
    await boss.stop({ graceful: opts.graceful ?? true, timeout: 10_000 });
  }

  /**
   * Simulates a killed process (tests): the workers stop polling and pg-boss's pool closes
   * without settling the runs in progress, so they stay `active` in the database until expiry,
   * exactly as after a crash. Handlers still running in this process are left to themselves.
   */
  async abandon(): Promise<void> {
    const boss = this.#boss;
    if (!boss) return;
    this.#boss = undefined;
    this.#workersRunning = false;
    // Settling needs the pool: make every statement fail, then stop without waiting.
    const db = (boss as unknown as { getDb(): IDatabase }).getDb();
    const original = db.executeSql.bind(db);
    let dead = false;
    db.executeSql = async (text: string, values?: unknown[]) => {
      if (dead) throw new Error('process killed (simulated)');
      return original(text, values);
    };
    dead = true;
    // The stuck handlers belong to the "dead" process: they no longer count as pending.
    this.#active.clear();
    await boss.stop({ graceful: false, timeout: 1000 }).catch(() => {});
  }

  /** Jobs not yet finished (queued, waiting for a retry, or running), failure handling included. */
  async pending(): Promise<number> {
    const boss = this.#requireBoss();
    const names = this.names().flatMap((n) => [n, n + FAILED_SUFFIX]);
    if (names.length === 0) return 0;
    const db = (boss as unknown as { getDb(): IDatabase }).getDb();
    const { rows } = await db.executeSql(
      `select count(*)::int as n from ${SCHEMA}.job where name = any($1::text[]) and state in ('created', 'retry', 'active')`,
      [names],
    );
    return rows[0].n + this.#active.size;
  }

  #requireBoss(): PgBoss {
    if (!this.#boss) throw new Error('the job queue is not started');
    return this.#boss;
  }

  #retryOptions(def: JobDefinition<any, S>) {
    const scale = this.#options?.retryDelayScale ?? 1;
    const retryDelay = Math.round((def.retryDelaySeconds ?? 2) * scale);
    return {
      retryLimit: def.retryLimit ?? 5,
      retryDelay,
      // pg-boss turns a 0 delay with backoff into 1 s: no delay means no backoff.
      retryBackoff: retryDelay > 0 && (def.retryBackoff ?? true),
      expireInSeconds: this.#options?.expireInSeconds ?? def.expireInSeconds ?? 300,
      heartbeatSeconds: Math.max(10, this.#options?.heartbeatSeconds ?? DEFAULT_HEARTBEAT_SECONDS),
    };
  }

  #context(job: JobWithMetadata<object>): JobContext<S> {
    const options = this.#options!;
    return {
      em: options.orm.em.fork(),
      services: options.services,
      log: options.log.child({ job: job.name, jobId: job.id }),
      jobId: job.id,
      attempt: job.retryCount + 1,
      signal: job.signal,
    };
  }

  async #run(def: JobDefinition<any, S>, job: JobWithMetadata<object>): Promise<void> {
    const ctx = this.#context(job);
    try {
      await def.handler(ctx, job.data);
    } catch (err) {
      ctx.log.warn({ err, attempt: ctx.attempt, retryLimit: job.retryLimit }, 'job failed');
      throw err;
    }
  }

  /** The dead-letter copy of a job whose retries are exhausted: tell its definition, once. */
  async #runFailed(def: JobDefinition<any, S>, job: JobWithMetadata<object>): Promise<void> {
    if (!def.onFailed) return;
    const source = (job as unknown as { sourceOutput?: unknown }).sourceOutput;
    await def.onFailed(this.#context(job), job.data, failureReason(source));
  }

  #track<T>(p: Promise<T>): Promise<T> {
    this.#active.add(p);
    const done = () => this.#active.delete(p);
    p.then(done, done);
    return p;
  }
}

/** The message pg-boss stored for a failed run: the thrown error's, or its own (expiry). */
export function failureReason(output: unknown): string {
  if (output && typeof output === 'object') {
    const o = output as Record<string, unknown>;
    if (typeof o.message === 'string' && o.message) return o.message;
    if (o.value && typeof o.value === 'object') return failureReason(o.value);
    if (typeof o.value === 'string') return o.value;
  }
  if (typeof output === 'string' && output) return output;
  return 'the job did not finish (the process stopped or it timed out)';
}

/**
 * pg-boss statements on the connection of the EntityManager's current transaction. MikroORM's
 * `execute` inlines `?` parameters; pg-boss writes `$1` ones, so the statements go straight to
 * the transaction's Kysely connection (MikroORM 7 runs on Kysely) with driver-bound parameters.
 */
function transactionExecutor(em: EntityManager): IDatabase {
  const trx = em.getTransactionContext();
  if (!trx) throw new Error('jobs.enqueue must be called inside the write transaction (em.transactional)');
  if (!pgBoss) throw new Error('jobs.enqueue needs the job queue started (jobs.start)');
  return pgBoss.fromKysely(trx as unknown as KyselyTransactionLike);
}

async function ensureQueue(
  boss: PgBoss,
  name: string,
  options: { retryLimit: number; retryDelay: number; retryBackoff: boolean; expireInSeconds?: number; heartbeatSeconds?: number; deadLetter?: string; notify: boolean },
) {
  if (await boss.getQueue(name)) await boss.updateQueue(name, options);
  else await boss.createQueue(name, options);
}
