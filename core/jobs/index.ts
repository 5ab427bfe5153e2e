/**
 * The durable job queue (kernel service `services.jobs`): plugins define job types in `setup` and
 * queue jobs inside their write transactions, so a job exists if and only if its write commits.
 * The engine that runs them (pg-boss) is the process's: app/jobs/runner.ts.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { FastifyBaseLogger } from 'fastify';
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

/**
 * A task that runs as long as a serving process does (a delivery loop): every instance runs it,
 * so it claims its work in the database. `run` returns when `ctx.signal` aborts; a throw is
 * logged and it runs again after a pause. `ctx.em` is a root EntityManager: fork it per unit of work.
 */
export type BackgroundTask<S = unknown> = { name: string; run(ctx: Omit<JobContext<S>, 'jobId' | 'attempt'>): Promise<void> };

/** A job definition as the queue keeps it: with the plugin that defined it. */
export type DefinedJob<S = unknown> = JobDefinition<any, S> & { plugin: string };

/** Writes a job row on the transaction of `em` (the runner that is started: app/jobs/runner.ts). */
export type JobSender<S = unknown> = (em: EntityManager, def: DefinedJob<S>, payload: object, opts: EnqueueOptions) => Promise<string>;

const FAILED_SUFFIX = '.failed';

export class JobQueue<S = unknown> {
  #startup: Startup;
  #definitions = new Map<string, DefinedJob<S>>();
  #groupLimits = new Map<string, number>();
  #sender: JobSender<S> | undefined;
  /** The background tasks, for the runner (app/jobs/background.ts). */
  readonly tasks: (BackgroundTask<S> & { plugin: string })[] = [];

  /** Registrations throw once `startup` has ended (a queue of its own, in tests, never freezes). */
  constructor(startup = new Startup()) {
    this.#startup = startup;
  }

  /**
   * Called in a plugin's `setup`. `handler` runs in a worker; throwing retries it (with backoff)
   * until `retryLimit` retries are used up, then `onFailed` runs once. A handler must be
   * idempotent: a job whose process died mid-run runs again, on any instance, once its heartbeat
   * is stale (20 s by default).
   */
  define<P extends object>(plugin: string, def: JobDefinition<P, S>): void {
    this.#startup.assertOpen(`job definition ${def.name}`);
    if (!/^[\w.\-/]+$/.test(def.name) || def.name.endsWith(FAILED_SUFFIX)) throw new Error(`invalid job name "${def.name}"`);
    const existing = this.#definitions.get(def.name);
    if (existing) throw new Error(`job ${def.name} is defined by both ${existing.plugin} and ${plugin}`);
    this.#definitions.set(def.name, { ...def, plugin } as DefinedJob<S>);
  }

  /** Called in a plugin's `setup`: `task` runs in every serving process (app/jobs/background.ts). */
  background(plugin: string, task: BackgroundTask<S>): void {
    this.#startup.assertOpen(`background task ${task.name}`);
    this.tasks.push({ ...task, plugin });
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

  /** The definitions, for the runner. */
  definitions(): DefinedJob<S>[] {
    return [...this.#definitions.values()];
  }

  /** The limits `limit` set per group, for the runner. */
  groupLimits(): ReadonlyMap<string, number> {
    return this.#groupLimits;
  }

  /** The runner connects (start) and disconnects (stop) the queue's writes. */
  attach(sender: JobSender<S> | undefined): void {
    this.#sender = sender;
  }

  /**
   * Adds a job in the caller's transaction. `em` must be the transactional EntityManager of the
   * write (`db.writeTransaction(em, async (em) => jobs.enqueue(em, ...))`).
   */
  async enqueue(em: EntityManager, name: string, payload: object, opts: EnqueueOptions = {}): Promise<string> {
    const def = this.#definitions.get(name);
    if (!def) throw new Error(`job ${name} is not defined`);
    if (!this.#sender) throw new Error('the job queue is not started');
    return this.#sender(em, def, payload, opts);
  }
}
