import { type Actor, createExtensionPoint, db, type KernelServices, type OperationContext, raw, type Sql, sql, type TSchema } from '../../core/public.ts';
import { parentKinds, type RecordExtensions, type ParentAccess } from '../../lib/records/index.ts';
import { projectContributableBy, projectVisibleTo } from '../projects/extensions.ts';

/** A study as other plugins see it in hooks. */
export interface StudyRecord {
  id: string;
  organizationId: string;
  projectId: string;
  name: string;
  status: string;
}

/** Contributed study fields (`elnA`, `useElnB`, ...), response fields and lifecycle hooks. */
export const studyExtensions = createExtensionPoint<RecordExtensions<StudyRecord>>('studies.records');

/** Studies exactly as GET /studies/{id} returns them, for plugins that embed studies (collections). */
export interface StudyReader {
  /** The study response schema with contributed fields; call it in `register` (registries are complete). */
  schema(): TSchema;
  /** The studies the actor may view among those matching `where` (SQL on study alias `s`), newest first. */
  visible(ctx: OperationContext, where: Sql): Promise<({ id: string } & Record<string, unknown>)[]>;
}

export const studyReader = createExtensionPoint<StudyReader>('studies.reader');

export const RESERVED_STUDY_FIELDS = { elnA: 'eln-a', useElnB: 'eln-b' };

/**
 * Access to a study follows its project: `join` brings the project in as `<alias>_p`,
 * `visible` filters on it (tenant scope included), `contributable` tells whether the actor may write.
 */
export function studyAccess(services: KernelServices, actor: Actor, alias: string): { join: Sql; visible: Sql; contributable: Sql } {
  const p = `${alias}_p`;
  return {
    join: raw(`join project ${p} on ${p}.id = ${alias}.project_id`),
    // The study's own tenant column too: lists then walk the study index in page order.
    visible: sql`${raw(alias)}.organization_id = ${actor.organizationId} and ${projectVisibleTo(services, actor, p)}`,
    contributable: projectContributableBy(services, actor, p),
  };
}

/** The study as the actor sees it (404 naming the study when not viewable), for child records. */
export function studyAccessById(ctx: OperationContext, studyId: string): Promise<ParentAccess> {
  return parentKinds(ctx.services).get('study')!.access(ctx, studyId);
}

/**
 * The row locks that pin a study where it is now (core/db/locks.ts): its project shared, the
 * study itself in `mode` (`update` to change it, `share` to add to or move things into it).
 * None when the study does not exist in the actor's organization (the check after answers 404).
 */
export async function studyLocks(ctx: OperationContext, studyId: string, mode: db.RowLock['mode']): Promise<db.RowLock[]> {
  const row = await db.queryOne<{ projectId: string }>(
    ctx.em,
    sql`select project_id as "projectId" from study where id = ${studyId} and organization_id = ${ctx.actor.organizationId}`,
  );
  if (!row) return [];
  return [
    { table: 'project', id: row.projectId, mode: 'share' },
    { table: 'study', id: studyId, mode },
  ];
}
