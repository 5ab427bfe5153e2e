import crypto from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import {
  fetchPage,
  recordTotal,
  isoDate,
  lifecycleColumns,
  lifecycleDto,
  mergeUpdate,
  NotFoundError,
  parseDateInput,
  query,
  queryOne,
  raw,
  sql,
  transition,
  ValidationError,
  type LifecycleShape,
  type LifecycleStatus,
  type OperationContext,
  type PageRequest,
  type RecordExtensions,
  type Sql,
  writeTransaction,
  lockLocated,
  lockChildren,
  type RowLock,
} from '../../core/public.ts';
import { provisioning } from '../../lib/integrations/index.ts';
import { findAssayType } from '../assay-types/extensions.ts';
import { studyAccessById, studyLocks } from '../studies/extensions.ts';
import { visibleChildTotal } from '../projects/extensions.ts';
import { Assay } from './entities.ts';
import { assayAccess, type AssayRecord } from './extensions.ts';
import type { CreateBody, UpdateBody } from './schemas.ts';
import { validateValues, type Values } from './values.ts';

/** Columns aliased to the entity's property names, so rows and entities share one mapper. */
const columns = sql`a.id, a.organization_id as "organizationId", a_s.project_id as "projectId", a.study_id as "studyId",
  a.assay_type_id as "assayTypeId", a.name, a.description, a.start_date as "startDate", a.field_values as "fieldValues",
  ${lifecycleColumns('a')}`;

/** An assay entity, or a row selected with `columns` (which adds `projectId`). */
interface AssayShape extends LifecycleShape {
  id: string;
  organizationId: string;
  studyId: string;
  assayTypeId: string;
  name: string;
  description?: string | null;
  startDate?: Date | string | null;
  fieldValues: Values;
}

/** `projectId` is the study's: rows carry it, entities do not (it is passed along). */
function toDto(a: AssayShape, projectId: string) {
  return {
    id: a.id,
    organizationId: a.organizationId,
    projectId,
    studyId: a.studyId,
    assayTypeId: a.assayTypeId,
    name: a.name,
    description: a.description ?? null,
    startDate: isoDate(a.startDate ?? null),
    values: a.fieldValues,
    ...lifecycleDto(a),
  };
}

export type AssayDto = ReturnType<typeof toDto>;

export const assaySort = {
  fields: { createdAt: 'a.created_at', updatedAt: 'a.updated_at', name: 'a.name', status: 'a.status', startDate: 'a.start_date' },
  default: ['createdAt,desc'],
  tiebreaker: 'a.id',
};

/** What hooks get: the entity's identity plus its study's project. */
function toRecord(a: { id: string; organizationId: string; studyId: string; assayTypeId: string; name: string; status: string }, projectId: string): AssayRecord {
  return { id: a.id, organizationId: a.organizationId, projectId, studyId: a.studyId, assayTypeId: a.assayTypeId, name: a.name, status: a.status };
}

export class AssayService {
  readonly extensions: RecordExtensions<AssayRecord>;
  constructor(extensions: RecordExtensions<AssayRecord>) {
    this.extensions = extensions;
  }

  /** Assays the actor may view, optionally of one study (404 when that study is not viewable). */
  #selected?: Sql;
  /** The record's columns plus the fields other plugins contribute (one query per read). */
  get #columns(): Sql {
    return (this.#selected ??= sql`${columns}${this.extensions.outputColumns(raw('a.id'))}`);
  }

  async list(ctx: OperationContext, page: PageRequest, studyId?: string) {
    if (studyId) await studyAccessById(ctx, studyId);
    const access = assayAccess(ctx.services, ctx.actor, 'a');
    const byStudy = studyId ? sql` and a.study_id = ${studyId}` : raw('');
    const from = sql`from assay a ${access.join} where ${access.visible}${byStudy}`;
    const count = studyId ? recordTotal(sql`${studyId}`, 'assay') : visibleChildTotal(ctx.actor, 'assay');
    const { rows, total } = await fetchPage<AssayShape & { projectId: string }>(ctx.em, { columns: this.#columns, from, total: count }, page);
    return { items: await this.extensions.decorate(ctx.em, rows.map((r) => toDto(r, r.projectId)), rows), total };
  }

  async get(ctx: OperationContext, id: string): Promise<AssayDto> {
    const row = await this.#find(ctx, id);
    const [dto] = await this.extensions.decorate(ctx.em, [toDto(row, row.projectId)], [row]);
    return dto;
  }

  async #find(ctx: OperationContext, id: string) {
    const access = assayAccess(ctx.services, ctx.actor, 'a');
    const row = await queryOne<AssayShape & { projectId: string; canContribute: boolean }>(
      ctx.em,
      sql`select ${this.#columns}, ${access.contributable} as "canContribute" from assay a ${access.join} where a.id = ${id} and ${access.visible}`,
    );
    if (!row) throw new NotFoundError('Assay', id);
    return row;
  }

  /**
   * Loads the entity for a write (inside its transaction): locks its project and study
   * (shared) and the assay, plus a move's target study and its project, in the kernel's lock
   * order; then 404 if not viewable, 403 if not a contributor, judged on the current rows.
   */
  async #forWrite(ctx: OperationContext, id: string, targetStudyId?: string) {
    const org = ctx.actor.organizationId;
    await lockLocated(ctx.em, org, async () => {
      const row = await queryOne<{ studyId: string }>(ctx.em, sql`select study_id as "studyId" from assay where id = ${id} and organization_id = ${org}`);
      const locks: RowLock[] = row ? [...(await studyLocks(ctx, row.studyId, 'share')), { table: 'assay', id, mode: 'update' }] : [];
      if (targetStudyId) locks.push(...(await studyLocks(ctx, targetStudyId, 'share')));
      return locks;
    });
    const row = await this.#find(ctx, id);
    ctx.services.permissions.assertContributor(row);
    return { assay: await ctx.em.findOneOrFail(Assay, { id, organizationId: ctx.actor.organizationId }), projectId: row.projectId };
  }

  async #respond(ctx: OperationContext, assay: AssayShape, projectId: string): Promise<AssayDto> {
    const [dto] = await this.extensions.decorate(ctx.em, [toDto(assay, projectId)]);
    return dto;
  }

  async create(ctx: OperationContext, body: CreateBody): Promise<AssayDto> {
    const startDate = parseDateInput('startDate', body.startDate);
    const { assay, projectId } = await writeTransaction(ctx.em, async (em) => {
      const tx = { ...ctx, em };
      // The study (and its project) must not be deleted or moved between this check and the commit.
      await lockLocated(em, ctx.actor.organizationId, () => studyLocks(tx, body.studyId, 'share'));
      const study = await studyAccessById(tx, body.studyId);
      ctx.services.permissions.assertContributor(study);
      const type = await findAssayType(em, ctx.actor.organizationId, body.assayTypeId);
      if (!type) throw new NotFoundError('Assay type', body.assayTypeId);
      if (type.status !== 'ACTIVE') {
        throw new ValidationError([{ field: 'assayTypeId', message: `assay type "${type.name}" is ${type.status}: only an ACTIVE assay type can be used` }]);
      }
      const a = em.create(Assay, {
        id: crypto.randomUUID(),
        organizationId: ctx.actor.organizationId,
        studyId: body.studyId,
        assayTypeId: type.id,
        name: body.name,
        description: body.description ?? null,
        startDate: startDate ?? null,
        fieldValues: validateValues(type, (body.values ?? {}) as Values),
        status: 'ACTIVE',
        archived: false,
        createdById: ctx.actor.organizationUserId,
      });
      await em.flush();
      const record = toRecord(a, study.projectId);
      await this.extensions.saveFields(tx, record, body, 'create');
      await this.extensions.runOnCreate(tx, record);
      ctx.services.activity.record(em, ctx.actor, {
        eventType: 'assay.created',
        projectId: study.projectId,
        studyId: a.studyId,
        assayId: a.id,
        data: { name: a.name, assayTypeId: a.assayTypeId },
      });
      return { assay: a, projectId: study.projectId };
    });
    await this.extensions.runAfterCreate(ctx, toRecord(assay, projectId));
    return this.#respond(ctx, assay, projectId);
  }

  async update(ctx: OperationContext, id: string, body: UpdateBody): Promise<AssayDto> {
    const merged = { ...body, startDate: parseDateInput('startDate', body.startDate) };
    const { assay, projectId } = await writeTransaction(ctx.em, async (em) => {
      const tx = { ...ctx, em };
      const { assay: a, projectId } = await this.#forWrite(tx, id);
      if (body.assayTypeId !== undefined && body.assayTypeId !== a.assayTypeId) {
        throw new ValidationError([{ field: 'assayTypeId', message: 'cannot be changed: it is fixed when the assay is created' }]);
      }
      const changed = mergeUpdate('assay', a, merged, ['name', 'description', 'startDate'], {
        status: `POST /assays/${id}/status`,
        studyId: `PATCH /assays/${id}/move`,
      });
      if (body.values) {
        // The type may be DELETED or INACTIVE by now: the assay keeps it, and its fields still apply.
        const type = (await findAssayType(em, a.organizationId, a.assayTypeId, { includeDeleted: true }))!;
        const values = validateValues(type, body.values as Values, a.fieldValues);
        if (!isDeepStrictEqual(values, a.fieldValues)) {
          a.fieldValues = values;
          changed.push('values');
        }
      }
      changed.push(...(await this.extensions.saveFields(tx, toRecord(a, projectId), body, 'update')));
      ctx.services.activity.record(em, ctx.actor, { eventType: 'assay.updated', projectId, studyId: a.studyId, assayId: id, data: { fields: changed } });
      return { assay: a, projectId };
    });
    return this.#respond(ctx, assay, projectId);
  }

  async setStatus(ctx: OperationContext, id: string, status: LifecycleStatus): Promise<AssayDto> {
    const { assay, projectId } = await writeTransaction(ctx.em, async (em) => {
      const { assay: a, projectId } = await this.#forWrite({ ...ctx, em }, id);
      const oldStatus = transition('assay', a, status);
      if (oldStatus) {
        ctx.services.activity.record(em, ctx.actor, {
          eventType: 'assay.status_changed',
          projectId,
          studyId: a.studyId,
          assayId: id,
          data: { oldStatus, newStatus: status },
        });
      }
      return { assay: a, projectId };
    });
    return this.#respond(ctx, assay, projectId);
  }

  /** `POST /assays/:id/retry-initialization`: reruns the failed provisioning steps. */
  async retryInitialization(ctx: OperationContext, id: string): Promise<AssayDto> {
    const { assay, projectId } = await writeTransaction(ctx.em, async (em) => {
      const { assay: a, projectId } = await this.#forWrite({ ...ctx, em }, id);
      await provisioning(ctx.services).retry({ ...ctx, em }, 'assay', a);
      return { assay: a, projectId };
    });
    return this.#respond(ctx, assay, projectId);
  }

  async setArchived(ctx: OperationContext, id: string, archived: boolean): Promise<AssayDto> {
    const { assay, projectId } = await writeTransaction(ctx.em, async (em) => {
      const { assay: a, projectId } = await this.#forWrite({ ...ctx, em }, id);
      if (a.archived !== archived) {
        a.archived = archived;
        ctx.services.activity.record(em, ctx.actor, { eventType: 'assay.archived', projectId, studyId: a.studyId, assayId: id, data: { archived } });
      }
      return { assay: a, projectId };
    });
    return this.#respond(ctx, assay, projectId);
  }

  /** Moves an assay to another study; contributor on both studies' projects; recorded on both sides. */
  async move(ctx: OperationContext, id: string, studyId: string): Promise<AssayDto> {
    const { assay, projectId } = await writeTransaction(ctx.em, async (em) => {
      const tx = { ...ctx, em };
      const { assay: a, projectId: fromProjectId } = await this.#forWrite(tx, id, studyId);
      if (a.studyId === studyId) return { assay: a, projectId: fromProjectId };
      const target = await studyAccessById(tx, studyId);
      ctx.services.permissions.assertContributor(target);
      const fromStudyId = a.studyId;
      a.studyId = studyId;
      // Its history goes with it: judged where it is now, not where it was.
      await query(em, sql`update activity set project_id = ${target.projectId}, study_id = ${studyId}
        where assay_id = ${id} and organization_id = ${ctx.actor.organizationId} and event_type <> 'assay.moved'`);
      const data = { fromStudyId, toStudyId: studyId };
      const sides = [{ projectId: fromProjectId, studyId: fromStudyId, other: studyId }, { projectId: target.projectId, studyId, other: fromStudyId }];
      for (const { other, ...side } of sides) {
        ctx.services.activity.record(em, ctx.actor, { eventType: 'assay.moved', ...side, assayId: id, data, refers: { kind: 'study', id: other } });
      }
      return { assay: a, projectId: target.projectId };
    });
    return this.#respond(ctx, assay, projectId);
  }

  async delete(ctx: OperationContext, id: string): Promise<void> {
    await writeTransaction(ctx.em, async (em) => {
      const tx = { ...ctx, em };
      const { assay: a, projectId } = await this.#forWrite(tx, id);
      await this.extensions.runBeforeDelete(tx, [toRecord(a, projectId)]);
      em.remove(a);
      ctx.services.activity.record(em, ctx.actor, { eventType: 'assay.deleted', projectId, studyId: a.studyId, assayId: id, data: { name: a.name } });
    });
  }

  /** Cascade from study deletion (and so project deletion): the assays' own children first, then the assays. */
  async deleteOfStudies(ctx: OperationContext, studyIds: string[]): Promise<void> {
    // The studies are locked: lock their assays as they are now (one moved away is not taken along).
    const ids = await lockChildren(ctx.em, ctx.actor.organizationId, 'assay', sql`study_id in (${studyIds})`);
    if (!ids.length) return;
    const records = await query<AssayRecord>(
      ctx.em,
      sql`select a.id, a.organization_id as "organizationId", s.project_id as "projectId", a.study_id as "studyId",
            a.assay_type_id as "assayTypeId", a.name, a.status
            from assay a join study s on s.id = a.study_id
           where a.id in (${ids})`,
    );
    await this.extensions.runBeforeDelete(ctx, records);
    if (records.length) await ctx.em.nativeDelete(Assay, { id: { $in: records.map((r) => r.id) } });
  }
}
