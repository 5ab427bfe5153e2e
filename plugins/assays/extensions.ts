import { createExtensionPoint, raw, sql, type Actor, type KernelServices, type OperationContext, type Sql } from '../../core/public.ts';
import { parentKinds, type RecordExtensions, type ParentAccess } from '../../lib/records/index.ts';
import { studyAccess } from '../studies/extensions.ts';

/** An assay as other plugins see it in hooks (`projectId` is its study's project). */
export interface AssayRecord {
  id: string;
  organizationId: string;
  projectId: string;
  studyId: string;
  assayTypeId: string;
  name: string;
  status: string;
}

/**
 * Contributed assay fields (`elnA`, `useElnB`, ...), response fields and lifecycle hooks. The
 * tasks plugin creates an assay's standard tasks from an `onCreate` hook (inside the create
 * transaction), reading them with `standardTasks` of plugins/assay-types/extensions.ts.
 */
export const assayExtensions = createExtensionPoint<RecordExtensions<AssayRecord>>('assays.records');

export const RESERVED_ASSAY_FIELDS = { elnA: 'eln-a', useElnB: 'eln-b' };

/**
 * Access to an assay follows its study's project: `join` brings the study in as `<alias>_s`
 * (and its project as `<alias>_s_p`), `visible` filters (tenant scope included),
 * `contributable` tells whether the actor may write, `projectId` is the project id column.
 */
export function assayAccess(services: KernelServices, actor: Actor, alias: string): { join: Sql; visible: Sql; contributable: Sql; projectId: Sql } {
  const s = `${alias}_s`;
  const study = studyAccess(services, actor, s);
  return {
    join: sql`${raw(`join study ${s} on ${s}.id = ${alias}.study_id`)} ${study.join}`,
    visible: sql`${raw(alias)}.organization_id = ${actor.organizationId} and ${study.visible}`,
    contributable: study.contributable,
    projectId: raw(`${s}.project_id`),
  };
}

/** The assay as the actor sees it (404 naming the assay when not viewable), for child records. */
export function assayAccessById(ctx: OperationContext, assayId: string): Promise<ParentAccess> {
  return parentKinds(ctx.services).get('assay')!.access(ctx, assayId);
}
