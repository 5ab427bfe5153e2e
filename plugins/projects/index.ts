import { definePlugin, queryOne, RecordExtensions, registerLifecycleRecord, sql } from '../../core/public.ts';
import { Project } from './entities.ts';
import { events } from './events.ts';
import { migrations } from './migrations.ts';
import { projectAccess, projectExtensions, projectVisibleTo, RESERVED_PROJECT_FIELDS, type ProjectRecord } from './extensions.ts';
import { createBodySchema, projectSchema, updateBodySchema } from './schemas.ts';
import { ProjectService, projectSort } from './service.ts';

const tags = ['Projects'];

/** Projects: the root of visibility and membership; offers the `projects.records` extension point. */
export default definePlugin({
  name: 'projects',
  version: '1.0.0',
  description: 'Projects (list, get, create, update, status, archive, delete)',
  dependsOn: ['users'],
  entities: [Project],
  migrations,
  events,
  setup(ctx) {
    const extensions = new RecordExtensions<ProjectRecord>('project', RESERVED_PROJECT_FIELDS);
    ctx.provide(projectExtensions, extensions);
    ctx.services.parents.register('projects', {
      kind: 'project',
      segment: 'projects',
      label: 'Project',
      access: async (op, id) => {
        const { canContribute } = await projectAccess(op, id);
        return { kind: 'project', id, projectId: id, studyId: null, assayId: null, canContribute };
      },
      projectIdOf: (parentId) => parentId,
      visible: (op, parentId) => sql`exists (select 1 from project vp where vp.id = ${parentId} and ${projectVisibleTo(op.services, op.actor, 'vp')})`,
      beforeDelete: (hook) => extensions.beforeDelete((op, records) => hook(op, records.map((r) => r.id))),
    });
    // Storage, ELN and Git steps after creation (core/provisioning): status INITIALIZING → ACTIVE / INITIALIZATION_FAILED.
    ctx.services.provisioning.registerKind('projects', {
      kind: 'project',
      table: 'project',
      entity: Project,
      scope: async (em, id) => ((await queryOne(em, sql`select 1 from project where id = ${id}`)) ? { projectId: id, studyId: null, assayId: null } : undefined),
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
