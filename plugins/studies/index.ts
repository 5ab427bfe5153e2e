import {
  archiveWrite,
  definePlugin,
  defineRead,
  defineWrite,
  IdParams,
  queryOne,
  RecordExtensions,
  retryInitializationWrite,
  sql,
  statusWrite,
} from '../../core/public.ts';
import { projectExtensions } from '../projects/extensions.ts';
import { Study } from './entities.ts';
import { events } from './events.ts';
import { migrations } from './migrations.ts';
import { RESERVED_STUDY_FIELDS, studyAccess, studyAccessById, studyExtensions, studyReader, type StudyRecord } from './extensions.ts';
import { MoveBody, ProjectParams, createBodySchema, studySchema, updateBodySchema, type CreateBody, type UpdateBody } from './schemas.ts';
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
    const Study = studySchema(extensions.outputProperties());
    ctx.read(
      defineRead({
        name: 'list_studies',
        description: 'List the studies the caller may view (those of projects they may view).',
        path: '/studies',
        tags,
        response: Study,
        paged: { sort: studySort },
        run: (c, _input, page) => service.list(c, page),
      }),
    );
    ctx.read(
      defineRead({
        name: 'list_studies_by_project',
        description: 'List the studies of one project.',
        path: '/projects/:projectId/studies',
        tags,
        params: ProjectParams,
        response: Study,
        paged: { sort: studySort },
        run: (c, { projectId }, page) => service.list(c, page, projectId),
      }),
    );
    ctx.read(
      defineRead({
        name: 'get_study',
        description: 'Get one study by id.',
        path: '/studies/:id',
        tags,
        params: IdParams,
        response: Study,
        run: (c, { id }) => service.get(c, id),
      }),
    );
    ctx.write(
      defineWrite({
        method: 'POST',
        operationId: 'create_study',
        description: 'Create a study in a project the caller contributes to.',
        path: '/studies',
        tags,
        body: createBodySchema(extensions.bodyProperties('create')),
        status: 201,
        response: Study,
        preValidate: (body) => extensions.rejectUnavailable(body),
        run: (c, { body }) => service.create(c, body as CreateBody),
      }),
    );
    ctx.write(
      defineWrite({
        method: 'PUT',
        operationId: 'update_study',
        description: 'Update a study (omitted fields keep their value). Contributors only.',
        path: '/studies/:id',
        tags,
        params: IdParams,
        body: updateBodySchema(extensions.bodyProperties('update')),
        status: 200,
        response: Study,
        preValidate: (body) => extensions.rejectUnavailable(body),
        run: (c, { params, body }) => service.update(c, params.id, body as UpdateBody),
      }),
    );
    const lifecycle = { kind: 'study', base: '/studies', tags, response: Study };
    ctx.write(statusWrite(lifecycle, (c, id, status) => service.setStatus(c, id, status)));
    ctx.write(retryInitializationWrite(lifecycle, (c, id) => service.retryInitialization(c, id)));
    ctx.write(archiveWrite(lifecycle, (c, id, archived) => service.setArchived(c, id, archived)));
    ctx.write(
      defineWrite({
        method: 'PATCH',
        operationId: 'move_study',
        description: 'Move a study (with its assays) to another project. Contributor on both projects.',
        path: '/studies/:id/move',
        tags,
        params: IdParams,
        body: MoveBody,
        status: 200,
        response: Study,
        run: (c, { params, body }) => service.move(c, params.id, body.projectId),
      }),
    );
    ctx.write(
      defineWrite({
        method: 'DELETE',
        operationId: 'delete_study',
        description: 'Delete a study and its assays. Contributors only.',
        path: '/studies/:id',
        tags,
        params: IdParams,
        status: 204,
        run: (c, { params }) => service.delete(c, params.id),
      }),
    );
  },
});
