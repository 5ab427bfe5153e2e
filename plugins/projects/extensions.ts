import { createExtensionPoint, raw, RecordExtensions, sql, type AccessColumns, type Actor, type KernelServices, type Sql } from '../../core/public.ts';

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

/** SQL expression: the actor may contribute to the project aliased `alias`. */
export function projectContributableBy(services: KernelServices, actor: Actor, alias: string): Sql {
  return services.permissions.canContribute(actor, accessColumns(alias));
}
