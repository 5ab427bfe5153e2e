import { isDeepStrictEqual } from 'node:util';
import { type ActivityScope, db, errors, schemas, type SetupContext, sql } from '../../core/public.ts';
import { defineLifecycleRecord, lifecycleColumns, lifecycleDto, newId, type LifecycleShape, type RecordExtensions } from '../../lib/records/index.ts';
import { findAssayType, validateValues, type Values } from '../assay-types/extensions.ts';
import { studyLocks } from '../studies/extensions.ts';
import { provisioned, visibleChildTotal } from '../projects/extensions.ts';
import { Assay } from './entities.ts';
import { assayAccess, type AssayRecord } from './extensions.ts';
import type { CreateBody, UpdateBody } from './schemas.ts';

/** An assay entity, or a row selected with the columns below (which add `projectId`). */
interface AssayShape extends LifecycleShape {
  id: string;
  organizationId: string;
  studyId: string;
  assayTypeId: string;
  name: string;
  code?: string | null;
  description?: string | null;
  startDate?: Date | string | null;
  fieldValues: Values;
}

/** `projectId` is the study's: rows carry it, entities do not (the scope has it). */
function toDto(a: AssayShape, { projectId }: ActivityScope) {
  return {
    id: a.id,
    organizationId: a.organizationId,
    projectId,
    studyId: a.studyId,
    assayTypeId: a.assayTypeId,
    code: a.code ?? null,
    name: a.name,
    description: a.description ?? null,
    startDate: db.isoDate(a.startDate ?? null),
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

/** The row locks that pin an assay: its study and project shared, the assay in `mode`. */
async function assayLocks(ctx: Parameters<typeof studyLocks>[0], id: string, mode: db.RowLock['mode']): Promise<db.RowLock[]> {
  const org = ctx.actor.organizationId;
  const row = await db.queryOne<{ studyId: string }>(ctx.em, sql`select study_id as "studyId" from assay where id = ${id} and organization_id = ${org}`);
  return row ? [...(await studyLocks(ctx, row.studyId, 'share')), { table: 'assay', id, mode }] : [];
}

/**
 * Assays as a lifecycle record (lib/records): inside a study, moved between studies, seen
 * through their study's project. What is their own: the assay type, fixed at creation, whose
 * fields their `values` follow.
 */
export function assayRecords(ctx: SetupContext, extensions: RecordExtensions<AssayRecord>) {
  return defineLifecycleRecord<AssayShape & { version: number }, AssayShape, AssayDto, AssayRecord>(ctx, {
    kind: 'assay',
    plural: 'assays',
    label: 'Assay',
    table: 'assay',
    alias: 'a',
    entity: Assay,
    extensions,
    parent: { kind: 'study', field: 'studyId' },
    // Seen as its study is (assayAccess).
    visibleAsParent: true,
    columns: sql`a.id, a.organization_id as "organizationId", a_s.project_id as "projectId", a.study_id as "studyId",
      a.assay_type_id as "assayTypeId", a.code, a.name, a.description, a.start_date as "startDate", a.field_values as "fieldValues",
      ${lifecycleColumns('a')}`,
    access: assayAccess,
    locks: assayLocks,
    total: (actor) => visibleChildTotal(actor, 'assay'),
    toDto,
    record: (a, { projectId }) => ({ id: a.id, organizationId: a.organizationId, projectId, studyId: a.studyId, assayTypeId: a.assayTypeId, name: a.name, status: a.status }),
    editable: ['code', 'name', 'description', 'startDate'],
    prepare: (body) => ({ ...body, startDate: schemas.parseDateInput('startDate', body.startDate as string | undefined) }),
    async build(op, body) {
      const b = body as CreateBody & { startDate?: Date };
      const type = await findAssayType(op.em, op.actor.organizationId, b.assayTypeId);
      if (!type) throw new errors.NotFoundError('Assay type', b.assayTypeId);
      if (type.status !== 'ACTIVE') {
        throw new errors.ValidationError([{ field: 'assayTypeId', message: `assay type "${type.name}" is ${type.status}: only an ACTIVE assay type can be used` }]);
      }
      return op.em.create(Assay, {
        id: newId(),
        organizationId: op.actor.organizationId,
        studyId: b.studyId,
        assayTypeId: type.id,
        code: b.code ?? null,
        name: b.name,
        description: b.description ?? null,
        startDate: b.startDate ?? null,
        fieldValues: validateValues(type, (b.values ?? {}) as Values),
        status: 'ACTIVE',
        archived: false,
        createdById: op.actor.organizationUserId,
      });
    },
    created: (a) => ({ name: a.name, assayTypeId: a.assayTypeId }),
    deleted: (a) => ({ name: a.name }),
    async edit(op, a, input, merge) {
      const body = input as UpdateBody;
      if (body.assayTypeId !== undefined && body.assayTypeId !== a.assayTypeId) {
        throw new errors.ValidationError([{ field: 'assayTypeId', message: 'cannot be changed: it is fixed when the assay is created' }]);
      }
      const changed = merge();
      if (body.values) {
        // The type may be DELETED or INACTIVE by now: the assay keeps it, and its fields still apply.
        const type = (await findAssayType(op.em, a.organizationId, a.assayTypeId, { includeDeleted: true }))!;
        const values = validateValues(type, body.values as Values, a.fieldValues);
        if (!isDeepStrictEqual(values, a.fieldValues)) {
          a.fieldValues = values;
          changed.push('values');
        }
      }
      return changed;
    },
    initializing: provisioned,
  });
}

export type AssayService = ReturnType<typeof assayRecords>;
