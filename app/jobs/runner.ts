/**
 * The engine of the kernel's job queue (core/jobs): pg-boss. The runtime (server, CLI `migrate`,
 * tests) attaches it with `start(...)`; workers run only where asked (`workers: true`), and
 * `stop()` ends them before the pool closes.
 *
 * Throughput: each queue has several workers (at most `concurrency`, or its group's limit); a
 * committed job wakes them through LISTEN/NOTIFY, a worker that got a job wakes its idle siblings
 * and fetches again at once, so a backlog drains at full concurrency instead of one job per poll.
 * Every handler also takes a slot of the process-wide limiter, so `concurrency` bounds the whole
 * process however many queues there are.
 */
import type { Db as IDatabase, JobWithMetadata, KyselyTransactionLike, PgBoss } from 'pg-boss';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { FastifyBaseLogger } from 'fastify';
import type { Orm } from '../../core/db/orm.ts';
import { isConnectionFailure } from '../../core/db/errors.ts';
import type { DefinedJob, EnqueueOptions, JobContext, JobDefinition, JobQueue } from '../../core/jobs/index.ts';
import { Limiter } from './limiter.ts';

/**
 * pg-boss (with its ~130 modules) is loaded by `start`: admin commands that never run or queue
 * jobs (keys, roles, recount) do not pay for it.
 */
let pgBoss: typeof import('pg-boss') | undefined;

/** Tuning for the runtime; tests make everything fast. */
export interface JobRunnerOptions<S = unknown> {
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

const SCHEMA = 'pgboss';

const FAILED_SUFFIX = '.failed';

export class JobRunner<S = unknown> {
  readonly #queue: JobQueue<S>;
  #boss: PgBoss | undefined;
  #options: JobRunnerOptions<S> | undefined;
  #workersRunning = false;
  #active = new Set<Promise<unknown>>();
  #limiter = new Limiter(DEFAULT_JOB_CONCURRENCY);
  #groupLimiters = new Map<string, Limiter>();

  constructor(queue: JobQueue<S>) {
    this.#queue = queue;
  }

  /**
   * Attaches pg-boss: installs or migrates its schema (`pgboss`), creates the queues, and starts
   * workers when asked. Idempotent per instance.
   */
  async start(options: JobRunnerOptions<S>): Promise<void> {
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
    this.#groupLimiters = new Map([...this.#queue.groupLimits()].map(([group, n]) => [group, new Limiter(Math.min(n, this.#limiter.limit))]));
    await boss.start();
    this.#boss = boss;
    this.#queue.attach((em, def, payload, opts) => this.#send(em, def, payload, opts));
    for (const def of this.#queue.definitions()) {
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
    for (const def of this.#queue.definitions()) {
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

  #group(def: DefinedJob<S>): string {
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
    this.#queue.attach(undefined);
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
    this.#queue.attach(undefined);
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
    const names = this.#queue.names().flatMap((n) => [n, n + FAILED_SUFFIX]);
    if (names.length === 0) return 0;
    const db = (boss as unknown as { getDb(): IDatabase }).getDb();
    const { rows } = await db.executeSql(
      `select count(*)::int as n from ${SCHEMA}.job where name = any($1::text[]) and state in ('created', 'retry', 'active')`,
      [names],
    );
    return rows[0].n + this.#active.size;
  }

  /** Writes the job row on the transaction of `em` (the queue's `enqueue`). */
  async #send(em: EntityManager, def: DefinedJob<S>, payload: object, opts: EnqueueOptions): Promise<string> {
    const id = await this.#requireBoss().send(def.name, payload, {
      ...this.#retryOptions(def),
      startAfter: opts.startAfterSeconds,
      db: transactionExecutor(em),
    });
    if (!id) throw new Error(`job ${def.name} was not queued`);
    return id;
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
  if (!pgBoss) throw new Error('the job queue is not started');
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
