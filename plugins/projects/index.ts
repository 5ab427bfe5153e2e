import { definePlugin, RecordExtensions, registerLifecycleRecord, registerRecordKind, sql } from '../../core/public.ts';
import { Project } from './entities.ts';
import { events } from './events.ts';
import { migrations } from './migrations.ts';
import { projectCounters } from './counters.ts';
import { projectAccess, projectExtensions, projectVisibleTo, RESERVED_PROJECT_FIELDS, type ProjectRecord } from './extensions.ts';
import { createBodySchema, projectSchema, updateBodySchema } from './schemas.ts';
import { ProjectService, projectSort } from './service.ts';

const tags = ['Projects'];

/** Projects: the root of visibility and membership; offers the `projects.records` extension point. */
export default definePlugin({
  name: 'projects',
  version: '1.0.0',
  description: 'Projects (list, get, create, update, status, archive, delete)',
  tags: {
    Projects: 'The top of the record tree: projects contain studies, which contain assays. Visibility PUBLIC, PROTECTED or PRIVATE.',
  },
  dependsOn: ['users'],
  entities: [Project],
  migrations,
  events,
  setup(ctx) {
    ctx.services.counters.register(projectCounters);
    const extensions = new RecordExtensions<ProjectRecord>('project', RESERVED_PROJECT_FIELDS);
    ctx.provide(projectExtensions, extensions);
    registerRecordKind(ctx, {
      kind: 'project',
      plural: 'projects',
      label: 'Project',
      table: 'project',
      entity: Project,
      extensions,
      locate: (id) => sql`select p.id as "projectId", null::uuid as "studyId" from project p where p.id = ${id}`,
      access: async (op, id) => ({ projectId: id, studyId: null, canContribute: (await projectAccess(op, id)).canContribute }),
      visible: (op, id) => sql`exists (select 1 from project vp where vp.id = ${id} and ${projectVisibleTo(op.services, op.actor, 'vp')} offset 0)`,
    });
    return new ProjectService(extensions);
  },
  register(ctx, service) {
    const { extensions } = service;
    registerLifecycleRecord(ctx, {
      kind: 'project',
      plural: 'projects',
      tags,
      response: projectSchema(extensions.outputProperties()),
      sort: projectSort,
      createBody: createBodySchema(extensions.bodyProperties('create')),
      updateBody: updateBodySchema(extensions.bodyProperties('update')),
      service,
      describe: {
        create: 'Create a project; the caller becomes its member.',
        delete: 'Delete a project and everything in it (studies, assays, ...). Contributors only.',
      },
    });
  },
});
