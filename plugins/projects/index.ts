import { archiveWrite, definePlugin, defineRead, defineWrite, IdParams, queryOne, RecordExtensions, retryInitializationWrite, sql, statusWrite } from '../../core/public.ts';
import { Project } from './entities.ts';
import { events } from './events.ts';
import { migrations } from './migrations.ts';
import { projectAccess, projectExtensions, projectVisibleTo, RESERVED_PROJECT_FIELDS, type ProjectRecord } from './extensions.ts';
import { createBodySchema, projectSchema, updateBodySchema, type CreateBody, type UpdateBody } from './schemas.ts';
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
    // Schemas are built now, after every plugin contributed its fields (registries are frozen).
    const Project = projectSchema(extensions.outputProperties());
    ctx.read(
      defineRead({
        name: 'list_projects',
        description: 'List the projects the caller may view.',
        path: '/projects',
        tags,
        response: Project,
        paged: { sort: projectSort },
        run: (c, _input, page) => service.list(c, page),
      }),
    );
    ctx.read(
      defineRead({
        name: 'get_project',
        description: 'Get one project by id.',
        path: '/projects/:id',
        tags,
        params: IdParams,
        response: Project,
        run: (c, { id }) => service.get(c, id),
      }),
    );
    ctx.write(
      defineWrite({
        method: 'POST',
        operationId: 'create_project',
        description: 'Create a project; the caller becomes its member.',
        path: '/projects',
        tags,
        body: createBodySchema(extensions.bodyProperties('create')),
        status: 201,
        response: Project,
        preValidate: (body) => extensions.rejectUnavailable(body),
        run: (c, { body }) => service.create(c, body as CreateBody),
      }),
    );
    ctx.write(
      defineWrite({
        method: 'PUT',
        operationId: 'update_project',
        description: 'Update a project (omitted fields keep their value). Contributors only.',
        path: '/projects/:id',
        tags,
        params: IdParams,
        body: updateBodySchema(extensions.bodyProperties('update')),
        status: 200,
        response: Project,
        preValidate: (body) => extensions.rejectUnavailable(body),
        run: (c, { params, body }) => service.update(c, params.id, body as UpdateBody),
      }),
    );
    const lifecycle = { kind: 'project', base: '/projects', tags, response: Project };
    ctx.write(statusWrite(lifecycle, (c, id, status) => service.setStatus(c, id, status)));
    ctx.write(archiveWrite(lifecycle, (c, id, archived) => service.setArchived(c, id, archived)));
    ctx.write(retryInitializationWrite(lifecycle, (c, id) => service.retryInitialization(c, id)));
    ctx.write(
      defineWrite({
        method: 'DELETE',
        operationId: 'delete_project',
        description: 'Delete a project and everything in it (studies, assays, ...). Contributors only.',
        path: '/projects/:id',
        tags,
        params: IdParams,
        status: 204,
        run: (c, { params }) => service.delete(c, params.id),
      }),
    );
  },
});
