import { db, errors, schemas, type SetupContext, sql } from '../../core/public.ts';
import { studyExtensions } from '../studies/extensions.ts';

const PLUGIN = 'collaborators';

/**
 * A study's collaborator (Study Tracker's "CRO / collaborator" of a study): with the studies
 * plugin enabled, studies gain `collaboratorId` (create and update; null clears it), kept in
 * this plugin's `study_collaborator` table. Deleting the collaborator clears it (cascade).
 */
export function addStudyCollaborator(ctx: SetupContext): void {
  const studies = ctx.find(studyExtensions);
  if (!studies) return;
  studies.addField({
    name: 'collaboratorId',
    plugin: PLUGIN,
    onUpdate: true,
    schema: schemas.Nullable(schemas.Uuid({ description: 'A collaborator (external organization) of the organization that works on the study; null for none' })),
    async save(op, study, value, phase) {
      const id = value as string | null;
      const current = await db.queryOne<{ id: string }>(op.em, sql`select collaborator_id as id from study_collaborator where study_id = ${study.id}`);
      if ((current?.id ?? null) === id) return phase === 'create' ? undefined : false;
      if (id === null) {
        await db.query(op.em, sql`delete from study_collaborator where study_id = ${study.id}`);
        return;
      }
      // Shared: a concurrent delete of the collaborator waits for this write (and the reverse).
      const found = await db.queryOne(op.em, sql`select 1 from collaborator where id = ${id} and organization_id = ${study.organizationId} for share`);
      if (!found) throw new errors.ValidationError([{ field: 'collaboratorId', message: `no collaborator with id ${id} in this organization` }]);
      await db.query(
        op.em,
        sql`insert into study_collaborator (study_id, organization_id, collaborator_id) values (${study.id}, ${study.organizationId}, ${id})
            on conflict (study_id) do update set collaborator_id = excluded.collaborator_id`,
      );
    },
  });
  studies.addOutput({
    name: 'collaboratorId',
    plugin: PLUGIN,
    keepNull: true,
    schema: schemas.Nullable(schemas.Uuid({ description: 'The study\'s collaborator (GET /collaborators/{id}); null for none' })),
    select: (id) => sql`(select sc.collaborator_id from study_collaborator sc where sc.study_id = ${id})`,
  });
  studies.beforeDelete(async (op, records) => {
    await db.query(op.em, sql`delete from study_collaborator where study_id in (${records.map((r) => r.id)})`);
  });
}
