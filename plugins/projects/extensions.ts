import {
  classTotal,
  OPEN_CLASSES,
  visibleTotal,
  createExtensionPoint,
  NotFoundError,
  queryOne,
  raw,
  RecordExtensions,
  sql,
  type AccessColumns,
  type Actor,
  type KernelServices,
  type OperationContext,
  type Sql,
} from '../../core/public.ts';

/** A project as other plugins see it in hooks. */
export interface ProjectRecord {
  id: string;
  organizationId: string;
  code: string;
  name: string;
  visibility: string;
  status: string;
  archived: boolean;
}

/**
 * The projects plugin's extension points: contributed create/update fields (`storage`, `elnA`,
 * `elnB`, `defaultGitGroup`, or a third party's), response fields and lifecycle hooks.
 */
export const projectExtensions = createExtensionPoint<RecordExtensions<ProjectRecord>>('projects.records');

/** Fields the spec names on projects that are filled by other plugins (name → plugin). */
export const RESERVED_PROJECT_FIELDS = { storage: 'storage', elnA: 'eln-a', elnB: 'eln-b', defaultGitGroup: 'git' };

function accessColumns(alias: string): AccessColumns {
  return { visibility: raw(`${alias}.visibility`), projectId: raw(`${alias}.id`) };
}

/**
 * SQL condition: the actor may view the project aliased `alias` (tenant scope included).
 * Child records (studies, assays, ...) join their project and filter with this.
 */
export function projectVisibleTo(services: KernelServices, actor: Actor, alias: string): Sql {
  return sql`${raw(alias)}.organization_id = ${actor.organizationId} and ${services.permissions.canView(actor, accessColumns(alias))}`;
}

/** SQL expression: the exact number of projects the actor may view (maintained counters, O(grants)). */
export function visibleProjectTotal(services: KernelServices, actor: Actor): Sql {
  if (actor.isAdmin) return classTotal(actor.organizationId, 'project');
  return sql`(${classTotal(actor.organizationId, 'project', { classes: OPEN_CLASSES })}
    + (select count(*) from (${services.permissions.privateProjects(actor)}) pp))`;
}

/**
 * SQL expression: the exact number of `kind` rows (`study`, `assay`, `activity`) in the
 * projects the actor may view; `categories` narrows activity.
 */
export function visibleChildTotal(services: KernelServices, actor: Actor, kind: string, categories?: readonly string[]): Sql {
  return visibleTotal(actor, kind, services.permissions.privateProjects(actor), categories);
}

/** SQL expression: the actor may contribute to the project aliased `alias`. */
export function projectContributableBy(services: KernelServices, actor: Actor, alias: string): Sql {
  return services.permissions.canContribute(actor, accessColumns(alias));
}

/**
 * The project as the actor sees it, for a child record's permission check:
 * 404 (naming the project) when not viewable, else whether the actor may contribute.
 */
export async function projectAccess(ctx: OperationContext, projectId: string): Promise<{ id: string; canContribute: boolean }> {
  const row = await queryOne<{ id: string; canContribute: boolean }>(
    ctx.em,
    sql`select p.id, ${projectContributableBy(ctx.services, ctx.actor, 'p')} as "canContribute"
          from project p where p.id = ${projectId} and ${projectVisibleTo(ctx.services, ctx.actor, 'p')}`,
  );
  if (!row) throw new NotFoundError('Project', projectId);
  return row;
}
