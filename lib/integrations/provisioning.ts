/**
 * Provisioning (`provisioning(ctx.services)`, one service per kernel): external work after a project, study or
 * assay is created (a storage folder, an ELN entry, a Git repository), done through the job queue
 * so that a slow or failing external system never blocks or loses the record. See README.md here.
 *
 * API for plugins (all from lib/integrations/index.ts):
 *
 *   // setup(ctx) — a step executor; the job `provisioning.<step>` with its own retry policy:
 *   provisioning(ctx.services).executor('eln-a.create-entry', async (sctx, step) => {
 *     // step.payload: what `add` stored; step.result: the partial result of an earlier run, or null.
 *     const folder = step.result?.folderId ?? (await vendor.createFolder(...)).id;
 *     await sctx.progress({ folderId: folder });             // committed at once: a rerun sees it
 *     const entry = await vendor.createEntry(folder, ...);
 *     sctx.activity('eln-a.entry_created', { entryId: entry.id });   // written with the completion
 *     sctx.onComplete(async (em) => { ...insert own rows... });      // same transaction as DONE
 *     return { folderId: folder, entryId: entry.id };         // stored on the step row
 *   }, { retryLimit: 5, retryDelaySeconds: 2, retryBackoff: true });
 *   // throw new StepFailedError('reason') to fail at once without retrying.
 *
 *   // a RecordExtensions field's save hook (inside the create transaction, after validation):
 *   await provisioning(ctx.services).add(ctx, { kind: 'study', id: study.id }, { step: 'eln-a.create-entry', payload: {...} });
 *   // -> step row PENDING + job enqueued in the same transaction; the study's status is INITIALIZING.
 *
 *   // reading results later (e.g. for a response field):
 *   await provisioning(ctx.services).steps(em, 'study', [id1, id2]);
 *
 * Record kinds (projects, studies, assays) register themselves in setup with `registerKind`, and
 * offer `POST /<segment>/{id}/retry-initialization` (`retryInitializationWrite`) calling `retry`.
 *
 * Record status: INITIALIZING while a step is PENDING/RUNNING; ACTIVE when every step is DONE;
 * INITIALIZATION_FAILED when a step exhausts its retries (activity `<kind>.initialization_failed`
 * `{step, reason}`); `retry` moves it back to INITIALIZING and reruns the FAILED steps.
 */
import crypto from 'node:crypto';
import type { EntitySchema } from '@mikro-orm/core';
import { type Actor, db, defineWrite, type EntityManager, errors, type JobContext, type KernelServices, type OperationContext, raw, schemas, sql, type Static, type TSchema, withArticle } from '../../core/public.ts';

/**
 * The table of provisioning steps: one row per external step of a record's provisioning; the
 * job queue runs it, and the row keeps its status and result, so a rerun never repeats finished
 * work. Named `kernel-` as it always was: the composition hands it to the kernel (app/assemble.ts).
 */
export const provisioningMigrations: db.MigrationDefinition[] = [
  {
    name: 'kernel-0003-provisioning',
    sql: [
      `create table provisioning_step (
        id uuid primary key,
        organization_id uuid not null references organization (id) deferrable initially deferred,
        record_kind text not null,
        record_id uuid not null,
        plugin text not null,
        step text not null,
        payload jsonb not null,
        status text not null check (status in ('PENDING', 'RUNNING', 'DONE', 'FAILED')),
        result jsonb,
        attempts integer not null default 0,
        last_error text,
        created_by_id uuid not null references organization_user (id) deferrable initially deferred,
        user_id uuid not null,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now(),
        completed_at timestamptz)`,
      `create index provisioning_step_record_idx on provisioning_step (record_kind, record_id)`,
    ],
  },
];

/** The states of a provisioning step row. */
export const STEP_STATUSES = ['PENDING', 'RUNNING', 'DONE', 'FAILED'] as const;
/** One of STEP_STATUSES. */
export type StepStatus = (typeof STEP_STATUSES)[number];
/** What a step stores as its (partial) result: JSON. */
export type StepResult = Record<string, unknown>;

/** A step as an executor sees it. */
export interface ProvisioningStep {
  id: string;
  kind: string;
  recordId: string;
  organizationId: string;
  plugin: string;
  /** `<plugin>.<step>`. */
  step: string;
  payload: Record<string, unknown>;
  /** What an earlier run stored (`progress` or a completed result), or null on the first run. */
  result: StepResult | null;
  status: StepStatus;
  attempts: number;
  lastError: string | null;
}

/** Where a record sits, for activity records. */
export interface RecordScope {
  projectId: string;
  studyId: string | null;
  assayId: string | null;
}

/** What an executor gets: the job's context, the record and its creator, and ways to store progress and completion work. */
export interface StepContext extends JobContext {
  /** The organization user who created the record (activity is recorded in their name). */
  actor: Actor;
  record: { kind: string; id: string } & RecordScope;
  /** Stores a partial result now (its own commit), so a rerun after a crash finds it in `step.result`. */
  progress(result: StepResult): Promise<void>;
  /** An activity record written in the completion transaction (once, with the step's DONE). */
  activity(eventType: string, data?: Record<string, unknown>): void;
  /** Work done in the completion transaction (e.g. the plugin's own rows for what was created). */
  onComplete(fn: (em: EntityManager) => Promise<void>): void;
}

/** A step's work; its return value is merged into the step's stored result. */
export type StepExecutor = (ctx: StepContext, step: ProvisioningStep) => Promise<StepResult | void>;

/** The retry policy and concurrency group of a step's job. */
export interface ExecutorOptions {
  /** Retries after the first run (default 5). */
  retryLimit?: number;
  /** First retry delay in seconds (default 2), doubled per retry with `retryBackoff` (default true). */
  retryDelaySeconds?: number;
  retryBackoff?: boolean;
  /** A run still going after this long is stopped and rerun (default 300; a dead process is found sooner, by its heartbeat). */
  expireInSeconds?: number;
  /** Concurrency group for `jobs.limit` (default: the plugin, i.e. its vendor). */
  group?: string;
}

/** Throw from an executor to fail the step at once (no retry): e.g. the input can never work. */
export class StepFailedError extends Error {}

/** A record kind whose creation may need provisioning: registered by its plugin in setup. */
export interface ProvisionedKind {
  /** `project`, `study`, `assay`. */
  kind: string;
  /** Its table (status, updated_at and version columns, lifecycle style). */
  table: string;
  /** Its entity, so the create transaction's managed instance shows the new status. */
  entity: EntitySchema<any, any>;
  /** Where the record sits; undefined when it no longer exists (deleted meanwhile). */
  scope(em: EntityManager, id: string): Promise<RecordScope | undefined>;
}

/** A step to add to a record (`add`). */
export interface AddStepInput {
  /** `<plugin>.<step>`, as registered with `executor`. */
  step: string;
  /** Owner plugin (default: the part of `step` before the first dot). */
  plugin?: string;
  payload?: Record<string, unknown>;
}

const JOB_PREFIX = 'provisioning.';

interface StepRow extends ProvisioningStep {
  createdById: string;
  userId: string;
}

const stepColumns = raw(`s.id, s.record_kind as kind, s.record_id as "recordId", s.organization_id as "organizationId", s.plugin, s.step,
  s.payload, s.result, s.status, s.attempts, s.last_error as "lastError", s.created_by_id as "createdById", s.user_id as "userId"`);

/** Steps per record on the job queue, with the record's INITIALIZING / ACTIVE / INITIALIZATION_FAILED status; one per kernel (`provisioning`). */
export class ProvisioningService {
  #jobs: KernelServices['jobs'];
  #activity: KernelServices['activity'];
  #kinds = new Map<string, ProvisionedKind & { plugin: string }>();
  #executors = new Map<string, StepExecutor>();

  constructor(jobs: KernelServices['jobs'], activity: KernelServices['activity']) {
    this.#jobs = jobs;
    this.#activity = activity;
  }

  /** A record kind registers itself (setup); declares its provisioning event types. */
  registerKind(plugin: string, kind: ProvisionedKind): void {
    if (this.#kinds.has(kind.kind)) throw new Error(`provisioned kind ${kind.kind} is registered twice`);
    this.#kinds.set(kind.kind, { ...kind, plugin });
    this.#activity.declare(plugin, {
      [`${kind.kind}.initialization_step_completed`]: 'RESEARCH',
      [`${kind.kind}.initialization_failed`]: 'RESEARCH',
      [`${kind.kind}.initialization_retried`]: 'RESEARCH',
    });
  }

  kinds(): string[] {
    return [...this.#kinds.keys()];
  }

  /** A step executor (setup). `step` is `<plugin>.<name>`; it runs as job `provisioning.<step>`. */
  executor(step: string, run: StepExecutor, options: ExecutorOptions = {}): void {
    if (this.#executors.has(step)) throw new Error(`provisioning step ${step} has two executors`);
    this.#executors.set(step, run);
    this.#jobs.define<{ stepId: string }>(step.split('.')[0], {
      name: JOB_PREFIX + step,
      ...options,
      handler: (ctx, payload) => this.#runStep(ctx, payload.stepId),
      onFailed: (ctx, payload, reason) => this.#fail(ctx.em, payload.stepId, reason),
    });
  }

  /**
   * Adds a step for a record, inside the write's transaction (`ctx.em` transactional): the step
   * row and its job commit with the record, and the record's status becomes INITIALIZING.
   */
  async add(ctx: OperationContext, target: { kind: string; id: string }, input: AddStepInput): Promise<string> {
    const kind = this.#kind(target.kind);
    if (!this.#executors.has(input.step)) throw new Error(`no executor for provisioning step ${input.step}`);
    const id = crypto.randomUUID();
    await ctx.em.execute(
      `insert into provisioning_step (id, organization_id, record_kind, record_id, plugin, step, payload, status, created_by_id, user_id)
       values (?, ?, ?, ?, ?, ?, ?::jsonb, 'PENDING', ?, ?)`,
      [id, ctx.actor.organizationId, target.kind, target.id, input.plugin ?? input.step.split('.')[0], input.step,
        JSON.stringify(input.payload ?? {}), ctx.actor.organizationUserId, ctx.actor.userId],
    );
    await this.#jobs.enqueue(ctx.em, JOB_PREFIX + input.step, { stepId: id });
    await this.#setManagedStatus(ctx.em, kind, target.id, 'INITIALIZING');
    return id;
  }

  /** The steps of records (any status), oldest first: for response fields and diagnostics. */
  async steps(em: EntityManager, kind: string, ids: string[]): Promise<ProvisioningStep[]> {
    if (ids.length === 0) return [];
    const rows = await db.query<StepRow>(
      em,
      sql`select ${stepColumns} from provisioning_step s where s.record_kind = ${kind} and s.record_id in (${ids}) order by s.created_at, s.id`,
    );
    return rows.map(toStep);
  }

  /**
   * The retry operation's work, inside its transaction, after the caller checked access: only an
   * INITIALIZATION_FAILED record may retry (else 400 naming both states); its FAILED steps go back
   * to PENDING (keeping their partial results) and are queued again.
   */
  async retry(ctx: OperationContext, kindName: string, record: { id: string; status: string }): Promise<void> {
    const kind = this.#kind(kindName);
    if (record.status !== 'INITIALIZATION_FAILED') {
      const label = `${/^[aeiou]/i.test(kindName) ? 'An' : 'A'} ${kindName}`;
      throw new errors.BadRequestError(`${label} cannot change status from ${record.status} to INITIALIZING: only INITIALIZATION_FAILED records can retry initialization`);
    }
    const failed = await db.query<{ id: string; step: string }>(
      ctx.em,
      sql`update provisioning_step set status = 'PENDING', attempts = 0, last_error = null, updated_at = now()
            where record_kind = ${kindName} and record_id = ${record.id} and status = 'FAILED' returning id, step`,
    );
    for (const s of failed) {
      if (!this.#executors.has(s.step)) throw new errors.BadRequestError(`The ${kindName} cannot retry step ${s.step}: its plugin is not enabled`);
      await this.#jobs.enqueue(ctx.em, JOB_PREFIX + s.step, { stepId: s.id });
    }
    const open = await db.queryOne<{ n: number }>(
      ctx.em,
      sql`select count(*)::int as n from provisioning_step where record_kind = ${kindName} and record_id = ${record.id} and status <> 'DONE'`,
    );
    const newStatus = open!.n > 0 ? 'INITIALIZING' : 'ACTIVE';
    const scope = (await kind.scope(ctx.em, record.id))!;
    await this.#setManagedStatus(ctx.em, kind, record.id, newStatus);
    this.#activity.record(ctx.em, ctx.actor, {
      eventType: `${kindName}.initialization_retried`,
      data: { steps: failed.map((s) => s.step) },
      ...scope,
    });
    this.#activity.record(ctx.em, ctx.actor, {
      eventType: `${kindName}.status_changed`,
      data: { oldStatus: 'INITIALIZATION_FAILED', newStatus },
      ...scope,
    });
  }

  #kind(name: string) {
    const kind = this.#kinds.get(name);
    if (!kind) throw new Error(`record kind ${name} is not registered for provisioning`);
    return kind;
  }

  /** Sets the status on the transaction's managed entity (so the response shows it) — flushed at commit. */
  async #setManagedStatus(em: EntityManager, kind: ProvisionedKind, id: string, status: string) {
    const entity = (await em.findOne(kind.entity, { id } as never)) as { status: string } | null;
    if (!entity) throw new Error(`${kind.kind} ${id} not found in the write transaction`);
    entity.status = status;
  }

  async #load(em: EntityManager, stepId: string): Promise<StepRow | undefined> {
    return db.queryOne<StepRow>(em, sql`select ${stepColumns} from provisioning_step s where s.id = ${stepId}`);
  }

  async #runStep(job: JobContext, stepId: string): Promise<void> {
    const em = job.em;
    const row = await this.#load(em, stepId);
    // Already settled (a duplicate or stale job): nothing to do.
    if (!row || row.status === 'DONE' || row.status === 'FAILED') return;
    const kind = this.#kind(row.kind);
    const scope = await kind.scope(em, row.recordId);
    if (!scope) {
      // The record was deleted meanwhile: nothing to provision.
      await em.execute('delete from provisioning_step where id = ?', [stepId]);
      return;
    }
    const executor = this.#executors.get(row.step)!;
    await em.execute(`update provisioning_step set status = 'RUNNING', attempts = attempts + 1, updated_at = now() where id = ?`, [stepId]);
    const actor = stepActor(row);
    const activities: { eventType: string; data?: Record<string, unknown> }[] = [];
    const completions: ((em: EntityManager) => Promise<void>)[] = [];
    const ctx: StepContext = {
      ...job,
      actor,
      record: { kind: row.kind, id: row.recordId, ...scope },
      progress: async (result) => {
        row.result = { ...(row.result ?? {}), ...result };
        await em.execute('update provisioning_step set result = ?::jsonb, updated_at = now() where id = ?', [JSON.stringify(row.result), stepId]);
      },
      activity: (eventType, data) => void activities.push({ eventType, data }),
      onComplete: (fn) => void completions.push(fn),
    };
    let result: StepResult | void;
    try {
      result = await executor(ctx, toStep({ ...row, attempts: row.attempts + 1 }));
    } catch (err) {
      const reason = err instanceof Error ? err.message : String(err);
      if (err instanceof StepFailedError) {
        await this.#fail(em, stepId, reason);
        return;
      }
      await em.execute('update provisioning_step set last_error = ?, updated_at = now() where id = ?', [reason, stepId]);
      throw err;
    }
    await db.writeTransaction(em, async (tx) => {
      const status = await this.#lockRecord(tx, kind, row.recordId);
      const current = await this.#load(tx, stepId);
      if (status === undefined || !current || current.status === 'DONE') return;
      const finalResult = { ...(row.result ?? {}), ...(result ?? {}) };
      await tx.execute(
        `update provisioning_step set status = 'DONE', result = ?::jsonb, last_error = null, updated_at = now(), completed_at = now() where id = ?`,
        [JSON.stringify(finalResult), stepId],
      );
      for (const fn of completions) await fn(tx);
      for (const a of activities) this.#activity.record(tx, actor, { ...a, ...scope });
      this.#activity.record(tx, actor, { eventType: `${row.kind}.initialization_step_completed`, data: { step: row.step }, ...scope });
      if (status !== 'INITIALIZING') return;
      const open = await db.queryOne<{ n: number }>(
        tx,
        sql`select count(*)::int as n from provisioning_step where record_kind = ${row.kind} and record_id = ${row.recordId} and status <> 'DONE'`,
      );
      if (open!.n === 0) await this.#changeStatus(tx, kind, row, scope, 'INITIALIZING', 'ACTIVE');
    });
  }

  /** Retries exhausted (or a StepFailedError): the step FAILED, the record INITIALIZATION_FAILED. */
  async #fail(em: EntityManager, stepId: string, reason: string): Promise<void> {
    await db.writeTransaction(em, async (tx) => {
      const found = await this.#load(tx, stepId);
      if (!found) return;
      const kind = this.#kind(found.kind);
      // The record's row first, as a completion takes it; then the step as it is now, since a
      // rerun of the step may have settled it while this transaction waited for the lock.
      const status = await this.#lockRecord(tx, kind, found.recordId);
      const row = await this.#load(tx, stepId);
      if (!row || row.status === 'DONE' || row.status === 'FAILED') return;
      const scope = await kind.scope(tx, row.recordId);
      if (status === undefined || !scope) return;
      await tx.execute(`update provisioning_step set status = 'FAILED', last_error = ?, updated_at = now() where id = ?`, [reason, stepId]);
      const actor = stepActor(row);
      this.#activity.record(tx, actor, { eventType: `${row.kind}.initialization_failed`, data: { step: row.step, reason }, ...scope });
      if (status === 'INITIALIZING') await this.#changeStatus(tx, kind, row, scope, 'INITIALIZING', 'INITIALIZATION_FAILED');
    });
  }

  /** Locks the record row for the rest of the transaction (steps of one record settle one at a time). */
  async #lockRecord(em: EntityManager, kind: ProvisionedKind, id: string): Promise<string | undefined> {
    const row = await db.queryOne<{ status: string }>(em, sql`select status from ${raw(kind.table)} where id = ${id} for update`);
    return row?.status;
  }

  async #changeStatus(em: EntityManager, kind: ProvisionedKind, row: StepRow, scope: RecordScope, oldStatus: string, newStatus: string) {
    await em.execute(`update ${kind.table} set status = ?, updated_at = now(), version = version + 1 where id = ?`, [newStatus, row.recordId]);
    this.#activity.record(em, stepActor(row), { eventType: `${row.kind}.status_changed`, data: { oldStatus, newStatus }, ...scope });
  }
}

/** One service per kernel instance, keyed by that kernel's services object. */
const perKernel = new WeakMap<object, ProvisioningService>();

/**
 * The provisioning service of the kernel these services belong to (`ctx.services` in setup, an
 * operation or a job), created on first use. The kernel does not know provisioning: the library
 * keeps one service per kernel, so two kernels in one process never share executors or kinds.
 */
export function provisioning(services: Pick<KernelServices, 'jobs' | 'activity'>): ProvisioningService {
  let service = perKernel.get(services);
  if (!service) perKernel.set(services, (service = new ProvisioningService(services.jobs, services.activity)));
  return service;
}

function toStep(r: StepRow): ProvisioningStep {
  const { createdById: _createdById, userId: _userId, ...step } = r;
  return step;
}

/** Background work is recorded in the name of whoever created the record. */
function stepActor(r: StepRow): Actor {
  return { keyId: '', userId: r.userId, organizationId: r.organizationId, organizationUserId: r.createdById, roles: [], isAdmin: false };
}

interface RetryWriteOptions<R extends TSchema> {
  kind: string;
  base: string;
  tags: string[];
  response: R;
}

/**
 * `POST {base}/:id/retry-initialization` (an extension of v1): reruns the failed provisioning
 * steps of an INITIALIZATION_FAILED record, which becomes INITIALIZING. Contributors only.
 */
export function retryInitializationWrite<R extends TSchema>(opts: RetryWriteOptions<R>, run: (ctx: OperationContext, id: string) => Promise<Static<R>>) {
  return defineWrite({
    method: 'POST',
    operationId: `retry_${opts.kind}_initialization`,
    description:
      `Extension of v1: retry the provisioning of ${withArticle(opts.kind)} whose status is INITIALIZATION_FAILED (storage folder, ` +
      `notebook entry, repository ...). The failed steps run again and the status becomes INITIALIZING, then ACTIVE or ` +
      `INITIALIZATION_FAILED. Any other status is a 400. Contributors only.`,
    path: `${opts.base}/:id/retry-initialization`,
    tags: opts.tags,
    params: schemas.IdParams,
    status: 200,
    errors: [403],
    response: opts.response,
    run: (ctx, { params }) => run(ctx, params.id) as never,
  });
}
