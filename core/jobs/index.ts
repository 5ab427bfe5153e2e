/**
 * The durable job queue (kernel service `services.jobs`), on pg-boss (PostgreSQL-backed).
 *
 * API for plugins:
 *   - `jobs.define(plugin, { name, handler, retryLimit?, retryDelaySeconds?, retryBackoff?, expireInSeconds?, onFailed? })`
 *     in `setup`: a job type. `handler(ctx, payload)` runs in a worker; throwing retries it (with
 *     backoff) until `retryLimit` retries are used up, then `onFailed(ctx, payload, reason)` runs once.
 *     A handler must be idempotent: a process killed mid-job runs it again after restart (once
 *     the job's `expireInSeconds` has passed).
 *   - `jobs.enqueue(em, name, payload, opts?)` INSIDE the write's transaction
 *     (`em.transactional(async (em) => ...)`): the job row is written on the transaction's own
 *     connection, so a job exists if and only if the transaction commits.
 *
 * The runtime (server, CLI `migrate`, tests) attaches pg-boss with `start(...)`; workers run only
 * where asked (`workers: true`), and `stop()` ends them before the pool closes.
 */
import { fromKysely, PgBoss, type Db as IDatabase, type JobWithMetadata, type KyselyTransactionLike } from 'pg-boss';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { FastifyBaseLogger } from 'fastify';
import type { Orm } from '../db/orm.ts';
import type { KernelServices } from '../kernel/services.ts';

/** What a job handler gets: its own EntityManager (no request, no transaction), services, log. */
export interface JobContext {
  em: EntityManager;
  services: KernelServices;
  log: FastifyBaseLogger;
  jobId: string;
  /** 1 on the first run, 2 on the first retry, ... */
  attempt: number;
  /** Aborted when the worker stops (shutdown): long handlers may give up early. */
  signal: AbortSignal;
}

export interface JobDefinition<P extends object = any> {
  /** Queue name: letters, digits, `_ . - /` (e.g. `provisioning.storage.create-folder`). */
  name: string;
  handler(ctx: JobContext, payload: P): Promise<void>;
  /** Retries after the first run (default 5). */
  retryLimit?: number;
  /** Delay before the first retry, seconds (default 2); doubled for each retry with `retryBackoff`. */
  retryDelaySeconds?: number;
  /** Exponential backoff with jitter (default true). */
  retryBackoff?: boolean;
  /** A run still active after this long is presumed dead (killed process) and retried (default 300). */
  expireInSeconds?: number;
  /** Runs once when retries are exhausted (including a last run that never finished). */
  onFailed?(ctx: JobContext, payload: P, reason: string): Promise<void>;
}

export interface EnqueueOptions {
  /** Run no earlier than this many seconds from now. */
  startAfterSeconds?: number;
}

/** Tuning for the runtime; tests make everything fast. */
export interface JobQueueOptions {
  url: string;
  orm: Orm;
  services: KernelServices;
  log: FastifyBaseLogger;
  /** Run workers in this process (server, tests with jobs). */
  workers?: boolean;
  /** Multiplies every retry delay (0 in tests: retry at once). Default 1. */
  retryDelayScale?: number;
  /** Overrides every definition's expireInSeconds (tests of a killed process). */
  expireInSeconds?: number;
  /** Worker poll interval, seconds (default 2; minimum 0.5). */
  pollingIntervalSeconds?: number;
  /** How often pg-boss looks for expired runs, seconds (default 60; minimum 1). */
  superviseIntervalSeconds?: number;
}

const FAILED_SUFFIX = '.failed';
const SCHEMA = 'pgboss';

export class JobQueue {
  #definitions = new Map<string, JobDefinition & { plugin: string }>();
  #boss: PgBoss | undefined;
  #options: JobQueueOptions | undefined;
  #workersRunning = false;
  #active = new Set<Promise<unknown>>();

  /** Called in a plugin's `setup`. */
  define<P extends object>(plugin: string, def: JobDefinition<P>): void {
    if (!/^[\w.\-/]+$/.test(def.name) || def.name.endsWith(FAILED_SUFFIX)) throw new Error(`invalid job name "${def.name}"`);
    const existing = this.#definitions.get(def.name);
    if (existing) throw new Error(`job ${def.name} is defined by both ${existing.plugin} and ${plugin}`);
    this.#definitions.set(def.name, { ...def, plugin } as JobDefinition & { plugin: string });
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
  async start(options: JobQueueOptions): Promise<void> {
    if (this.#boss) {
      if (!options.workers || this.#workersRunning) return;
      // Queue-only until now: restart with workers and supervision.
      await this.stop();
    }
    this.#options = options;
    const boss = new PgBoss({
      connectionString: options.url,
      schema: SCHEMA,
      max: 4,
      migrate: true,
      // Supervision (expiry of runs of killed processes, maintenance) where workers run.
      supervise: options.workers ?? false,
      // pg-boss refuses an option given as undefined: only tests set these.
      ...(options.superviseIntervalSeconds ? { superviseIntervalSeconds: options.superviseIntervalSeconds, monitorIntervalSeconds: options.superviseIntervalSeconds } : {}),
      schedule: false,
      // Workers LISTEN: a job committed by a request wakes them at once (polling stays the backstop).
      useListenNotify: options.workers ?? false,
      registerInstance: false,
      openTelemetry: { enabled: false },
    });
    boss.on('error', (err) => options.log.error({ err }, 'job queue error'));
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
    const pollingIntervalSeconds = this.#options?.pollingIntervalSeconds ?? 2;
    for (const def of this.#definitions.values()) {
      // Retries are not announced (only new jobs are): keep polling at the same pace with LISTEN on.
      const options = { pollingIntervalSeconds, notifyPollingIntervalSeconds: pollingIntervalSeconds, includeMetadata: true } as const;
      await boss.work(def.name, options, (jobs: JobWithMetadata<object>[]) => this.#track(Promise.all(jobs.map((job) => this.#run(def, job)))));
      await boss.work(def.name + FAILED_SUFFIX, options, (jobs: JobWithMetadata<object>[]) =>
        this.#track(Promise.all(jobs.map((job) => this.#runFailed(def, job)))),
      );
    }
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

  #retryOptions(def: JobDefinition) {
    const scale = this.#options?.retryDelayScale ?? 1;
    const retryDelay = Math.round((def.retryDelaySeconds ?? 2) * scale);
    return {
      retryLimit: def.retryLimit ?? 5,
      retryDelay,
      // pg-boss turns a 0 delay with backoff into 1 s: no delay means no backoff.
      retryBackoff: retryDelay > 0 && (def.retryBackoff ?? true),
      expireInSeconds: this.#options?.expireInSeconds ?? def.expireInSeconds ?? 300,
    };
  }

  #context(job: JobWithMetadata<object>): JobContext {
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

  async #run(def: JobDefinition, job: JobWithMetadata<object>): Promise<void> {
    const ctx = this.#context(job);
    try {
      await def.handler(ctx, job.data);
    } catch (err) {
      ctx.log.warn({ err, attempt: ctx.attempt, retryLimit: job.retryLimit }, 'job failed');
      throw err;
    }
  }

  /** The dead-letter copy of a job whose retries are exhausted: tell its definition, once. */
  async #runFailed(def: JobDefinition, job: JobWithMetadata<object>): Promise<void> {
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
  return fromKysely(trx as unknown as KyselyTransactionLike);
}

async function ensureQueue(
  boss: PgBoss,
  name: string,
  options: { retryLimit: number; retryDelay: number; retryBackoff: boolean; expireInSeconds?: number; deadLetter?: string; notify: boolean },
) {
  if (await boss.getQueue(name)) await boss.updateQueue(name, options);
  else await boss.createQueue(name, options);
}
