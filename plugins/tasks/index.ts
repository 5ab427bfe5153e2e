import { definePlugin, defineRead, defineWrite, schemas, withArticle } from '../../core/public.ts';
import { cascadeWithParents, parentParam, parentParams, type ParentAccess, parentKinds } from '../../lib/records/index.ts';
import { assayExtensions } from '../assays/extensions.ts';
import { standardTasks } from '../assay-types/extensions.ts';
import { events } from './events.ts';
import { migrations } from './migrations.ts';
import { Task } from './entities.ts';
import { CompleteBody, CreateTaskBody, UpdateTaskBody, taskSchema } from './schemas.ts';
import { TaskService, taskSort } from './service.ts';

const tags = ['Tasks'];
// The spec's agent tools list tasks of studies and assays only (no list_project_tasks).
const LIST_TOOLS = new Set(['study', 'assay']);

/** Tasks of projects, studies and assays; an assay starts with its type's standard tasks. */
export default definePlugin({
  name: 'tasks',
  version: '1.0.0',
  description: 'Tasks under projects, studies and assays',
  tags: {
    Tasks: 'To-do items of a project, study or assay.',
  },
  dependsOn: ['projects', 'studies'],
  entities: [Task],
  migrations,
  events,
  setup(ctx) {
    const service = new TaskService();
    // With the assays plugin enabled, a new assay gets its type's standard tasks in its own transaction.
    ctx.find(assayExtensions)?.onCreate(async (op, assay) => {
      const parent: ParentAccess = { kind: 'assay', id: assay.id, projectId: assay.projectId, studyId: assay.studyId, assayId: assay.id, canContribute: true };
      for (const task of await standardTasks(op.em, assay.organizationId, assay.assayTypeId)) {
        service.insert(op, parent, { label: task.label, order: task.order, fields: task.fields });
      }
    });
    return service;
  },
  register(ctx, service) {
    cascadeWithParents(ctx.services, 'task');
    const Task = taskSchema(ctx.services);
    ctx.read(
      defineRead({
        name: 'get_task',
        description: 'Get one task by id, whatever it is attached to (extension of v1: GET /tasks/{id}).',
        path: '/tasks/:id',
        tags,
        params: schemas.IdParams,
        response: Task,
        run: (c, { id }) => service.getAny(c, id),
      }),
    );
    for (const parent of parentKinds(ctx.services).all()) {
      const base = `/${parent.segment}/:${parentParam(parent)}/tasks`;
      const one = `${base}/:taskId`;
      const withTask = parentParams(parent, 'taskId');
      ctx.read(
        defineRead({
          name: `list_${parent.kind}_tasks`,
          description: `List the tasks of ${withArticle(parent.kind)}, in their order.`,
          path: base,
          tags,
          params: parentParams(parent),
          response: Task,
          paged: { sort: taskSort },
          tool: LIST_TOOLS.has(parent.kind),
          run: (c, params, page) => service.list(c, parent, params, page),
        }),
      );
      ctx.read(
        defineRead({
          name: `get_${parent.kind}_task`,
          description: `Get one task of ${withArticle(parent.kind)}.`,
          path: one,
          tags,
          params: withTask,
          response: Task,
          tool: false,
          run: (c, params) => service.get(c, parent, params, String(params.taskId)),
        }),
      );
      ctx.write(
        defineWrite({
          method: 'POST',
          operationId: `create_${parent.kind}_task`,
          description: `Create a task of ${withArticle(parent.kind)}. Contributors only.`,
          path: base,
          tags,
          params: parentParams(parent),
          body: CreateTaskBody,
          status: 201,
          errors: [403],
          response: Task,
          run: (c, { params, body }) => service.create(c, parent, params, body),
        }),
      );
      ctx.write(
        defineWrite({
          method: 'PUT',
          operationId: `update_${parent.kind}_task`,
          description: `Update a task of ${withArticle(parent.kind)} (omitted fields keep their value). Contributors only.`,
          path: one,
          tags,
          params: withTask,
          body: UpdateTaskBody,
          status: 200,
          errors: [403],
          response: Task,
          run: (c, { params, body }) => service.update(c, parent, params, String(params.taskId), body),
        }),
      );
      ctx.write(
        defineWrite({
          method: 'PATCH',
          operationId: `complete_${parent.kind}_task`,
          description: `Complete a task of ${withArticle(parent.kind)}; optional body {"status": "INCOMPLETE"} closes it undone. Contributors only.`,
          path: `${one}/complete`,
          tags,
          params: withTask,
          body: CompleteBody,
          status: 200,
          errors: [403],
          response: Task,
          run: (c, { params, body }) => service.complete(c, parent, params, String(params.taskId), body?.status ?? 'COMPLETE', body?.data as Record<string, unknown> | undefined),
        }),
      );
      ctx.write(
        defineWrite({
          method: 'DELETE',
          operationId: `delete_${parent.kind}_task`,
          description: `Delete a task of ${withArticle(parent.kind)}. Contributors only.`,
          path: one,
          tags,
          params: withTask,
          status: 204,
          errors: [403],
          run: (c, { params }) => service.delete(c, parent, params, String(params.taskId)),
        }),
      );
    }
  },
});
