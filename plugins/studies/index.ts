import { definePlugin, RecordExtensions, registerLifecycleRecord, registerRecordKind, sql } from '../../core/public.ts';
import { projectExtensions } from '../projects/extensions.ts';
import { Study } from './entities.ts';
import { events } from './events.ts';
import { migrations } from './migrations.ts';
import { studyCounters } from './counters.ts';
import { RESERVED_STUDY_FIELDS, studyAccess, studyAccessById, studyExtensions, studyReader, type StudyRecord } from './extensions.ts';
import { createBodySchema, studySchema, updateBodySchema } from './schemas.ts';
import { StudyService, studySort } from './service.ts';

const tags = ['Studies'];

/** Studies: the records inside a project; offers the `studies.records` extension point. */
export default definePlugin({
  name: 'studies',
  version: '1.0.0',
  description: 'Studies (list, get, create, update, status, archive, move, delete)',
  tags: {
    Studies: "Studies inside a project; they follow the project's visibility.",
  },
  dependsOn: ['projects'],
  entities: [Study],
  migrations,
  events,
  setup(ctx) {
    ctx.services.counters.register(studyCounters);
    const extensions = new RecordExtensions<StudyRecord>('study', RESERVED_STUDY_FIELDS);
    const service = new StudyService(extensions);
    ctx.provide(studyExtensions, extensions);
    ctx.provide(studyReader, { schema: () => studySchema(extensions.outputProperties()), visible: (c, where) => service.visible(c, where) });
    registerRecordKind(ctx, {
      kind: 'study',
      plural: 'studies',
      label: 'Study',
      table: 'study',
      entity: Study,
      extensions,
      locate: (id) => sql`select s.project_id as "projectId", null::uuid as "studyId" from study s where s.id = ${id}`,
      access: async (op, id) => ({ studyId: id, ...(await studyAccessById(op, id)) }),
      visible: (op, id) => {
        const access = studyAccess(op.services, op.actor, 'vs');
        return sql`exists (select 1 from study vs ${access.join} where vs.id = ${id} and ${access.visible} offset 0)`;
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
