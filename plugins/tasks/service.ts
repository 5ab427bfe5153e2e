import crypto from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { db, errors, fetchPage, type OperationContext, type PageRequest, schemas, sql, tables } from '../../core/public.ts';
import { lockedParentOf, attachedColumns, attachedDto, attachedTo, attachedVisible, mergeUpdate, parentOf, type AttachedRow, type ParentAccess, type ParentKind } from '../../lib/records/index.ts';
import { Task } from './entities.ts';
import type { CreateTaskBodyT, TaskStatus, UpdateTaskBodyT } from './schemas.ts';
import { validateValues, type AssayFieldDefinition, type Values } from '../assay-types/extensions.ts';

const columns = sql`${attachedColumns('t')},
  t.label, t.status, t.due_date as "dueDate", t.assigned_to_id as "assignedToId", t.position, t.fields, t.data, t.completed_at as "completedAt",
  t.completed_by_id as "completedById", t.created_by_id as "createdById", t.created_at as "createdAt",
  t.updated_at as "updatedAt", t.version`;

interface TaskShape extends AttachedRow {
  label: string;
  status: string;
  dueDate?: Date | string | null;
  assignedToId?: string | null;
  position: number;
  fields: AssayFieldDefinition[];
  data: Values;
  completedAt?: Date | string | null;
  completedById?: string | null;
  createdById: string;
  createdAt: Date | string;
  updatedAt: Date | string;
  version: number;
}

// The audit fields (createdById ... version) map as in every attached record's DTO (external links too).
function toDto(t: TaskShape) {
  return {
    ...attachedDto(t),
    label: t.label,
    status: t.status as TaskStatus,
    dueDate: db.isoDate(t.dueDate ?? null),
    assignedToId: t.assignedToId ?? null,
    order: t.position,
    fields: t.fields,
    data: t.data,
    completedAt: db.isoDate(t.completedAt ?? null),
    completedById: t.completedById ?? null,
    createdById: t.createdById,
    createdAt: db.isoDate(t.createdAt)!,
    updatedAt: db.isoDate(t.updatedAt)!,
    version: t.version,
  };
}

export type TaskDto = ReturnType<typeof toDto>;

export const taskSort = {
  fields: { order: 't.position', createdAt: 't.created_at', dueDate: 't.due_date', label: 't.label', status: 't.status' },
  default: ['order,asc', 'createdAt,asc'],
  tiebreaker: 't.id',
};

/** Where a task's activity is filed: the project, study and assay of its parent. */
const recordIds = (p: ParentAccess) => ({ projectId: p.projectId, studyId: p.studyId, assayId: p.assayId });

/** A task's data merged with `input` and checked against its form (400 naming `data.<field>`). */
function checkData(task: { label: string; fields: AssayFieldDefinition[]; data: Values }, input: Values | undefined): Values {
  if (!input) return task.data;
  return validateValues({ name: task.label, fields: task.fields }, input, task.data, { prefix: 'data', of: `the form of task "${task.label}"` });
}

/** Closing a task COMPLETE needs a value for every required field of its form. */
function checkCompletable(task: { status: string; fields: AssayFieldDefinition[]; data: Values }): void {
  if (task.status !== 'COMPLETE') return;
  const missing = task.fields.filter((f) => f.required && (task.data[f.name] === undefined || task.data[f.name] === null));
  if (missing.length) throw new errors.ValidationError(missing.map((f) => ({ field: `data.${f.name}`, message: 'is required to complete the task' })));
}

export class TaskService {
  async list(ctx: OperationContext, parent: ParentKind, params: Record<string, unknown>, page: PageRequest) {
    const access = await parentOf(ctx, parent, params);
    const { rows, total } = await fetchPage<TaskShape>(ctx.em, { columns, from: sql`from task t where ${attachedTo('t', access)}` }, page);
    return { items: rows.map(toDto), total };
  }

  async get(ctx: OperationContext, parent: ParentKind, params: Record<string, unknown>, id: string): Promise<TaskDto> {
    const access = await parentOf(ctx, parent, params);
    const row = await db.queryOne<TaskShape>(ctx.em, sql`select ${columns} from task t where t.id = ${id} and ${attachedTo('t', access)}`);
    if (!row) throw new errors.NotFoundError('Task', id);
    return toDto(row);
  }

  /** One task by id, whatever its parent (the get_task tool), if the actor may view its parent. */
  async getAny(ctx: OperationContext, id: string): Promise<TaskDto> {
    const row = await db.queryOne<TaskShape>(ctx.em, sql`select ${columns} from task t where t.id = ${id} and ${attachedVisible(ctx, 't')}`);
    if (!row) throw new errors.NotFoundError('Task', id);
    return toDto(row);
  }

  /** An assignee must be an organization user of the caller's organization (400 otherwise). */
  async #checkAssignee(ctx: OperationContext, id: string | null | undefined): Promise<void> {
    if (!id) return;
    if (!(await ctx.em.findOne(tables.OrganizationUser, { id, organizationId: ctx.actor.organizationId }))) {
      throw new errors.ValidationError([{ field: 'assignedToId', message: 'is not an organization user of this organization' }]);
    }
  }

  async #forWrite(ctx: OperationContext, parent: ParentKind, params: Record<string, unknown>, id: string) {
    const access = await lockedParentOf(ctx, parent, params);
    // Then the task (child after parents): writes of one task run one after the other, each on what the previous left.
    await db.query(ctx.em, sql`select 1 from task t where t.id = ${id} and ${attachedTo('t', access)} for update`);
    await db.recordLocked(ctx.em);
    const task = await ctx.em.findOne(Task, { id, parentKind: access.kind, parentId: access.id, organizationId: ctx.actor.organizationId });
    if (!task) throw new errors.NotFoundError('Task', id);
    return { access, task };
  }

  /** Inserts a task (also used for an assay's standard tasks, inside the assay's transaction). */
  insert(
    ctx: OperationContext,
    access: ParentAccess,
    input: { label: string; status?: TaskStatus; dueDate?: Date | null; assignedToId?: string | null; order?: number; fields?: AssayFieldDefinition[]; data?: Values },
  ) {
    const done = input.status === 'COMPLETE' || input.status === 'INCOMPLETE';
    const fields = input.fields ?? [];
    // A form starts with its fields' defaults; given data is checked against it.
    const defaults = Object.fromEntries(fields.filter((f) => f.defaultValue !== null && f.defaultValue !== undefined).map((f) => [f.name, f.defaultValue]));
    const data = checkData({ label: input.label, fields, data: defaults }, input.data);
    checkCompletable({ status: input.status ?? 'TODO', fields, data });
    const task = ctx.em.create(Task, {
      id: crypto.randomUUID(),
      organizationId: ctx.actor.organizationId,
      parentKind: access.kind,
      parentId: access.id,
      label: input.label,
      status: input.status ?? 'TODO',
      dueDate: input.dueDate ?? null,
      assignedToId: input.assignedToId ?? null,
      position: input.order ?? 0,
      fields,
      data,
      completedAt: done ? new Date() : null,
      completedById: done ? ctx.actor.organizationUserId : null,
      createdById: ctx.actor.organizationUserId,
    });
    ctx.services.activity.record(ctx.em, ctx.actor, { eventType: 'task.created', ...recordIds(access), data: { taskId: task.id, label: task.label } });
    return task;
  }

  async create(ctx: OperationContext, parent: ParentKind, params: Record<string, unknown>, body: CreateTaskBodyT): Promise<TaskDto> {
    const dueDate = schemas.parseDateInput('dueDate', body.dueDate);
    const task = await db.writeTransaction(ctx.em, async (em) => {
      const tx = { ...ctx, em };
      const access = await lockedParentOf(tx, parent, params);
      await this.#checkAssignee(tx, body.assignedToId);
      return this.insert(tx, access, { ...body, dueDate });
    });
    return toDto(task);
  }

  async update(ctx: OperationContext, parent: ParentKind, params: Record<string, unknown>, id: string, body: UpdateTaskBodyT): Promise<TaskDto> {
    const task = await db.writeTransaction(ctx.em, async (em) => {
      const tx = { ...ctx, em };
      const { access, task } = await this.#forWrite(tx, parent, params, id);
      await this.#checkAssignee(tx, body.assignedToId);
      const { order, data: input, ...rest } = body;
      const oldStatus = task.status;
      const changed = mergeUpdate('task', task, { ...rest, position: order, dueDate: schemas.parseDateInput('dueDate', body.dueDate) }, ['label', 'status', 'dueDate', 'assignedToId', 'position'], {});
      const data = checkData(task, input as Values | undefined);
      if (!isDeepStrictEqual(data, task.data)) {
        task.data = data;
        changed.push('data');
      }
      if (changed.includes('status') || changed.includes('data')) checkCompletable(task);
      this.#stampCompletion(ctx, task);
      if (changed.length) {
        // A status change says from what to what (spec, "Events" 2), as the complete operation's does.
        const statusChange = changed.includes('status') ? { oldStatus, newStatus: task.status } : {};
        ctx.services.activity.record(em, ctx.actor, { eventType: 'task.updated', ...recordIds(access), data: { taskId: id, fields: changed.map((f) => (f === 'position' ? 'order' : f)), ...statusChange } });
      }
      return task;
    });
    return toDto(task);
  }

  /** completedAt/By follow the status: set when a task is closed, cleared when it is reopened. */
  #stampCompletion(ctx: OperationContext, task: { status: string; completedAt?: Date | null; completedById?: string | null }) {
    const done = task.status === 'COMPLETE' || task.status === 'INCOMPLETE';
    if (done && !task.completedAt) {
      task.completedAt = new Date();
      task.completedById = ctx.actor.organizationUserId;
    } else if (!done) {
      task.completedAt = null;
      task.completedById = null;
    }
  }

  async complete(ctx: OperationContext, parent: ParentKind, params: Record<string, unknown>, id: string, status: 'COMPLETE' | 'INCOMPLETE', input?: Values): Promise<TaskDto> {
    const task = await db.writeTransaction(ctx.em, async (em) => {
      const tx = { ...ctx, em };
      const { access, task } = await this.#forWrite(tx, parent, params, id);
      const oldStatus = task.status;
      const data = checkData(task, input);
      checkCompletable({ status, fields: task.fields, data });
      if (!isDeepStrictEqual(data, task.data)) task.data = data;
      if (oldStatus !== status) {
        task.status = status;
        task.completedAt = null;
        this.#stampCompletion(ctx, task);
        ctx.services.activity.record(em, ctx.actor, { eventType: 'task.completed', ...recordIds(access), data: { taskId: id, label: task.label, oldStatus, newStatus: status } });
      }
      return task;
    });
    return toDto(task);
  }

  async delete(ctx: OperationContext, parent: ParentKind, params: Record<string, unknown>, id: string): Promise<void> {
    await db.writeTransaction(ctx.em, async (em) => {
      const tx = { ...ctx, em };
      const { access, task } = await this.#forWrite(tx, parent, params, id);
      em.remove(task);
      ctx.services.activity.record(em, ctx.actor, { eventType: 'task.deleted', ...recordIds(access), data: { taskId: id, label: task.label } });
    });
  }
}
