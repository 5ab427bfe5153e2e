import { sql, type SetupContext, type Visibility } from '../../core/public.ts';
import { defineLifecycleRecord, lifecycleColumns, lifecycleDto, newId, type LifecycleShape, type RecordExtensions } from '../../lib/records/index.ts';
import { Project } from './entities.ts';
import { projectAccessSql, provisioned, visibleProjectTotal, type ProjectRecord } from './extensions.ts';
import type { CreateBody } from './schemas.ts';

interface ProjectShape extends ProjectRecord, LifecycleShape {
  description: string;
}

function toDto(p: ProjectShape) {
  return {
    id: p.id,
    organizationId: p.organizationId,
    code: p.code,
    name: p.name,
    description: p.description,
    visibility: p.visibility as Visibility,
    ...lifecycleDto(p),
  };
}

export type ProjectDto = ReturnType<typeof toDto>;

export const projectSort = {
  fields: { createdAt: 'p.created_at', updatedAt: 'p.updated_at', name: 'p.name', code: 'p.code', status: 'p.status', visibility: 'p.visibility' },
  default: ['createdAt,desc'],
  tiebreaker: 'p.id',
};

/**
 * Projects as a lifecycle record (lib/records): the root of the record tree. What is their own:
 * the creator becomes a member, visibility changes are recorded, deletion drops the memberships,
 * and a write locks the project row itself (its studies and assays share-lock it).
 */
export function projectRecords(ctx: SetupContext, extensions: RecordExtensions<ProjectRecord>) {
  return defineLifecycleRecord<ProjectShape & { version: number }, ProjectShape, ProjectDto, ProjectRecord>(ctx, {
    kind: 'project',
    plural: 'projects',
    label: 'Project',
    table: 'project',
    alias: 'p',
    entity: Project,
    extensions,
    columns: sql`p.id, p.organization_id as "organizationId", p.code, p.name, p.description, p.visibility, ${lifecycleColumns('p')}`,
    access: projectAccessSql,
    locks: async (_op, id, mode) => [{ table: 'project', id, mode }],
    total: visibleProjectTotal,
    toDto,
    editable: ['code', 'name', 'description', 'visibility'],
    async build(op, body) {
      const b = body as CreateBody;
      const p = op.em.create(Project, {
        id: newId(),
        organizationId: op.actor.organizationId,
        code: b.code,
        name: b.name,
        description: b.description,
        visibility: b.visibility ?? 'PRIVATE',
        status: 'ACTIVE',
        archived: false,
        createdById: op.actor.organizationUserId,
      });
      // The creator becomes a member, so a PRIVATE project stays reachable to them.
      await op.services.permissions.addMember(op.em, op.actor, p.id, op.actor.organizationUserId);
      return p;
    },
    created: (p) => ({ code: p.code, name: p.name, visibility: p.visibility }),
    deleted: (p) => ({ code: p.code, name: p.name }),
    afterUpdate(op, p, before, scope) {
      if (p.visibility === before.visibility) return;
      const data = { oldVisibility: before.visibility, newVisibility: p.visibility };
      op.services.activity.record(op.em, op.actor, { eventType: 'project.visibility_changed', projectId: scope.projectId, data });
    },
    beforeRemove: (op, p) => op.services.permissions.removeProject(op.em, p.id),
    initializing: provisioned,
  });
}

export type ProjectService = ReturnType<typeof projectRecords>;
