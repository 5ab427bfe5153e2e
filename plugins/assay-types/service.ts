import crypto from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { db, type EntityManager, errors, fetchPage, type OperationContext, type PageRequest, raw, sql } from '../../core/public.ts';
import { mergeUpdate, transition } from '../../lib/records/index.ts';
import { AssayType } from './entities.ts';
import { normalizeFields, normalizeTasks } from './definition.ts';
import type { AssayFieldDefinition, AssayTypeStatus, StandardTask } from './extensions.ts';
import type { CreateBody, UpdateBody } from './schemas.ts';

/** Statuses an admin may set, by current status (README, "Status transitions"). DELETED only through DELETE. */
export const ASSAY_TYPE_TRANSITIONS: Record<AssayTypeStatus, AssayTypeStatus[]> = {
  DRAFT: ['ACTIVE', 'ARCHIVED'],
  ACTIVE: ['INACTIVE', 'ARCHIVED'],
  INACTIVE: ['ACTIVE', 'ARCHIVED'],
  ARCHIVED: ['INACTIVE'],
  DELETED: [],
};

const columns = sql`t.id, t.organization_id as "organizationId", t.name, t.description, t.status, t.fields, t.tasks,
  t.created_by_id as "createdById", t.created_at as "createdAt", t.updated_at as "updatedAt", t.version`;

interface AssayTypeShape {
  id: string;
  organizationId: string;
  name: string;
  description?: string | null;
  status: string;
  fields: AssayFieldDefinition[];
  tasks: StandardTask[];
  createdById?: string | null;
  createdAt: Date | string;
  updatedAt: Date | string;
  version: number;
}

function toDto(t: AssayTypeShape) {
  return {
    id: t.id,
    organizationId: t.organizationId,
    name: t.name,
    description: t.description ?? null,
    status: t.status as AssayTypeStatus,
    fields: t.fields,
    tasks: t.tasks,
    createdById: t.createdById ?? null,
    createdAt: db.isoDate(t.createdAt)!,
    updatedAt: db.isoDate(t.updatedAt)!,
    version: t.version,
  };
}

export type AssayTypeDto = ReturnType<typeof toDto>;

export const assayTypeSort = {
  fields: { name: 't.name', createdAt: 't.created_at', updatedAt: 't.updated_at', status: 't.status' },
  default: ['name,asc'],
  tiebreaker: 't.id',
};

/** 409 when another live type of the organization has the name (the unique index backs this up). */
async function assertNameFree(em: EntityManager, organizationId: string, name: string, exceptId?: string): Promise<void> {
  const other = exceptId ? sql` and id <> ${exceptId}` : raw('');
  const clash = await db.queryOne(
    em,
    sql`select id from assay_type where organization_id = ${organizationId} and lower(name) = lower(${name}) and status <> 'DELETED'${other}`,
  );
  if (clash) throw new errors.ConflictError(`An assay type named "${name}" already exists`);
}

/** Validates and writes a new type: shared by POST /assay-types and the bootstrap file. */
export async function insertAssayType(em: EntityManager, organizationId: string, createdById: string | null, body: CreateBody) {
  const fields = normalizeFields(body.fields ?? []);
  const tasks = normalizeTasks(body.tasks ?? []);
  const name = body.name.trim();
  await assertNameFree(em, organizationId, name);
  const type = em.create(AssayType, {
    id: crypto.randomUUID(),
    organizationId,
    name,
    description: body.description ?? null,
    status: body.status ?? 'DRAFT',
    fields,
    tasks,
    createdById,
  });
  await em.flush();
  return type;
}

export class AssayTypeService {
  /** Live (not DELETED) types of the caller's organization. */
  async list(ctx: OperationContext, page: PageRequest) {
    const from = sql`from assay_type t where t.organization_id = ${ctx.actor.organizationId} and t.status <> 'DELETED'`;
    const { rows, total } = await fetchPage<AssayTypeShape>(ctx.em, { columns, from }, page);
    return { items: rows.map(toDto), total };
  }

  async get(ctx: OperationContext, id: string): Promise<AssayTypeDto> {
    const row = await db.queryOne<AssayTypeShape>(
      ctx.em,
      sql`select ${columns} from assay_type t where t.id = ${id} and t.organization_id = ${ctx.actor.organizationId} and t.status <> 'DELETED'`,
    );
    if (!row) throw new errors.NotFoundError('Assay type', id);
    return toDto(row);
  }

  /**
   * Loads the entity for a write: 404 when it is not a live type of the organization, then 403 unless admin.
   * The row is locked first, so concurrent writes of one type run one after the other, each on the
   * state the previous one left (no 409 from the version check, no transition judged on a stale status).
   * `no key update`: assays being created with the type (their foreign key's check) need not wait.
   */
  async #forWrite(ctx: OperationContext, id: string) {
    await db.query(ctx.em, sql`select id from assay_type where id = ${id} and organization_id = ${ctx.actor.organizationId} for no key update`);
    await db.recordLocked(ctx.em);
    const type = await ctx.em.findOne(AssayType, { id, organizationId: ctx.actor.organizationId, status: { $ne: 'DELETED' } });
    if (!type) throw new errors.NotFoundError('Assay type', id);
    ctx.services.permissions.assertAdmin(ctx.actor);
    return type;
  }

  async create(ctx: OperationContext, body: CreateBody): Promise<AssayTypeDto> {
    ctx.services.permissions.assertAdmin(ctx.actor);
    const type = await db.writeTransaction(ctx.em, async (em) => {
      const t = await insertAssayType(em, ctx.actor.organizationId, ctx.actor.organizationUserId, body);
      ctx.services.activity.record(em, ctx.actor, { eventType: 'assay_type.created', data: { assayTypeId: t.id, name: t.name, status: t.status } });
      return t;
    });
    return toDto(type);
  }

  async update(ctx: OperationContext, id: string, body: UpdateBody): Promise<AssayTypeDto> {
    const type = await db.writeTransaction(ctx.em, async (em) => {
      const t = await this.#forWrite({ ...ctx, em }, id);
      // Names are kept trimmed, so " qPCR " cannot stand beside "qPCR".
      const changed = mergeUpdate('assay type', t, { ...body, name: body.name?.trim() }, ['name', 'description'], { status: `POST /assay-types/${id}/status` });
      if (changed.includes('name')) await assertNameFree(em, t.organizationId, t.name, id);
      // Lists are compared by value: jsonb does not keep the key order they were written in.
      const fields = body.fields && normalizeFields(body.fields);
      if (fields && !isDeepStrictEqual(fields, t.fields)) {
        t.fields = fields;
        changed.push('fields');
      }
      const tasks = body.tasks && normalizeTasks(body.tasks);
      if (tasks && !isDeepStrictEqual(tasks, t.tasks)) {
        t.tasks = tasks;
        changed.push('tasks');
      }
      if (changed.length) ctx.services.activity.record(em, ctx.actor, { eventType: 'assay_type.updated', data: { assayTypeId: id, fields: changed } });
      return t;
    });
    return toDto(type);
  }

  async setStatus(ctx: OperationContext, id: string, status: AssayTypeStatus): Promise<AssayTypeDto> {
    const type = await db.writeTransaction(ctx.em, async (em) => {
      const t = await this.#forWrite({ ...ctx, em }, id);
      if (status === 'DELETED') {
        throw new errors.BadRequestError(`An assay type cannot change status from ${t.status} to DELETED: delete it with DELETE /assay-types/${id}`);
      }
      const oldStatus = transition('assay type', t, status, ASSAY_TYPE_TRANSITIONS);
      if (oldStatus) {
        ctx.services.activity.record(em, ctx.actor, { eventType: 'assay_type.status_changed', data: { assayTypeId: id, oldStatus, newStatus: status } });
      }
      return t;
    });
    return toDto(type);
  }

  /** Marks the type DELETED: gone from the API, unusable for new assays, kept for the assays that have it. */
  async delete(ctx: OperationContext, id: string): Promise<void> {
    await db.writeTransaction(ctx.em, async (em) => {
      const t = await this.#forWrite({ ...ctx, em }, id);
      t.status = 'DELETED';
      ctx.services.activity.record(em, ctx.actor, { eventType: 'assay_type.deleted', data: { assayTypeId: id, name: t.name } });
    });
  }
}
