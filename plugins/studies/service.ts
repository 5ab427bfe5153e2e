import { db, schemas, type SetupContext, sql } from '../../core/public.ts';
import { defineLifecycleRecord, lifecycleColumns, lifecycleDto, newId, type LifecycleShape, type RecordExtensions } from '../../lib/records/index.ts';
import { provisioned, visibleChildTotal } from '../projects/extensions.ts';
import { Study } from './entities.ts';
import { studyAccess, studyLocks, type StudyRecord } from './extensions.ts';
import type { CreateBody } from './schemas.ts';

interface StudyShape extends StudyRecord, LifecycleShape {
  code?: string | null;
  description?: string | null;
  startDate?: Date | string | null;
}

function toDto(s: StudyShape) {
  return {
    id: s.id,
    organizationId: s.organizationId,
    projectId: s.projectId,
    code: s.code ?? null,
    name: s.name,
    description: s.description ?? null,
    startDate: db.isoDate(s.startDate ?? null),
    ...lifecycleDto(s),
  };
}

export type StudyDto = ReturnType<typeof toDto>;

export const studySort = {
  fields: { createdAt: 's.created_at', updatedAt: 's.updated_at', name: 's.name', status: 's.status', startDate: 's.start_date' },
  default: ['createdAt,desc'],
  tiebreaker: 's.id',
};

/**
 * Studies as a lifecycle record (lib/records): inside a project, moved between projects, seen
 * through their project's visibility. What is their own: the fields and the start date.
 */
export function studyRecords(ctx: SetupContext, extensions: RecordExtensions<StudyRecord>) {
  return defineLifecycleRecord<StudyShape & { version: number }, StudyShape, StudyDto, StudyRecord>(ctx, {
    kind: 'study',
    plural: 'studies',
    label: 'Study',
    table: 'study',
    alias: 's',
    entity: Study,
    extensions,
    parent: { kind: 'project', field: 'projectId' },
    // Seen as its project is (studyAccess).
    visibleAsParent: true,
    columns: sql`s.id, s.organization_id as "organizationId", s.project_id as "projectId", s.code, s.name, s.description,
      s.start_date as "startDate", ${lifecycleColumns('s')}`,
    access: studyAccess,
    locks: studyLocks,
    total: (actor) => visibleChildTotal(actor, 'study'),
    toDto,
    editable: ['code', 'name', 'description', 'startDate'],
    prepare: (body) => ({ ...body, startDate: schemas.parseDateInput('startDate', body.startDate as string | undefined) }),
    build: (op, body) => {
      const b = body as CreateBody & { startDate?: Date };
      return op.em.create(Study, {
        id: newId(),
        organizationId: op.actor.organizationId,
        projectId: b.projectId,
        code: b.code ?? null,
        name: b.name,
        description: b.description ?? null,
        status: 'ACTIVE',
        startDate: b.startDate ?? null,
        archived: false,
        createdById: op.actor.organizationUserId,
      });
    },
    created: (s) => ({ name: s.name }),
    deleted: (s) => ({ name: s.name }),
    initializing: provisioned,
  });
}

export type StudyService = ReturnType<typeof studyRecords>;
