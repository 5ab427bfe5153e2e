import { definePlugin, queryOne, RecordExtensions, registerLifecycleRecord, sql } from '../../core/public.ts';
import { projectExtensions } from '../projects/extensions.ts';
import { Study } from './entities.ts';
import { events } from './events.ts';
import { migrations } from './migrations.ts';
import { RESERVED_STUDY_FIELDS, studyAccess, studyAccessById, studyExtensions, studyReader, type StudyRecord } from './extensions.ts';
import { createBodySchema, studySchema, updateBodySchema } from './schemas.ts';
import { StudyService, studySort } from './service.ts';

const tags = ['Studies'];

/** Studies: the records inside a project; offers the `studies.records` extension point. */
export default definePlugin({
  name: 'studies',
  version: '1.0.0',
  description: 'Studies (list, get, create, update, status, archive, move, delete)',
  dependsOn: ['projects'],
  entities: [Study],
  migrations,
  events,
  setup(ctx) {
    const extensions = new RecordExtensions<StudyRecord>('study', RESERVED_STUDY_FIELDS);
    const service = new StudyService(extensions);
    ctx.provide(studyExtensions, extensions);
    ctx.provide(studyReader, { schema: () => studySchema(extensions.outputProperties()), visible: (c, where) => service.visible(c, where) });
    ctx.services.parents.register('studies', {
      kind: 'study',
      segment: 'studies',
      label: 'Study',
      access: async (op, id) => {
        const study = await studyAccessById(op, id);
        return { kind: 'study', id, projectId: study.projectId, studyId: id, assayId: null, canContribute: study.canContribute };
      },
      projectIdOf: (parentId) => sql`(select ps.project_id from study ps where ps.id = ${parentId})`,
      visible: (op, parentId) => {
        const access = studyAccess(op.services, op.actor, 'vs');
        return sql`exists (select 1 from study vs ${access.join} where vs.id = ${parentId} and ${access.visible})`;
      },
      beforeDelete: (hook) => extensions.beforeDelete((op, records) => hook(op, records.map((r) => r.id))),
    });
    // ELN and Git steps after creation (core/provisioning): status INITIALIZING → ACTIVE / INITIALIZATION_FAILED.
    ctx.services.provisioning.registerKind('studies', {
      kind: 'study',
      table: 'study',
      entity: Study,
      scope: async (em, id) => {
        const row = await queryOne<{ projectId: string }>(em, sql`select project_id as "projectId" from study where id = ${id}`);
        return row && { projectId: row.projectId, studyId: id, assayId: null };
      },
    });
    // Deleting a project deletes its studies (and, through this plugin's own hook, their children).
    ctx.use(projectExtensions).beforeDelete((op, projects) => service.deleteOfProjects(op, projects.map((p) => p.id)));
    return service;
  },
  register(ctx, service) {
    const { extensions } = service;
    registerLifecycleRecord(ctx, {
      kind: 'study',
      plural: 'studies',
      tags,
      response: studySchema(extensions.outputProperties()),
      sort: studySort,
      createBody: createBodySchema(extensions.bodyProperties('create')),
      updateBody: updateBodySchema(extensions.bodyProperties('update')),
      service,
      parent: { kind: 'project', plural: 'projects', field: 'projectId' },
      describe: {
        list: 'List the studies the caller may view (those of projects they may view).',
        create: 'Create a study in a project the caller contributes to.',
        delete: 'Delete a study and its assays. Contributors only.',
      },
    });
  },
});
