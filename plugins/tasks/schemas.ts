import { type KernelServices, schemas, type Static, Type } from '../../core/public.ts';
import { parentProperties } from '../../lib/records/index.ts';

export const TASK_STATUSES = ['TODO', 'IN_PROGRESS', 'COMPLETE', 'INCOMPLETE'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

/** A field of a task's form: an assay type's field (plugins/assay-types, README "Fields of an assay type"). */
const TaskField = Type.Object({
  name: Type.String(),
  displayName: Type.String(),
  type: Type.String({ description: 'A field type of the assay types (TEXT, LONG_TEXT, NUMBER, INTEGER, BOOLEAN, DATE, CHOICE, FILE)' }),
  required: Type.Boolean({ description: 'The task cannot be completed without a value for it' }),
  description: schemas.Nullable(Type.String()),
  options: schemas.Nullable(Type.Array(Type.String())),
  defaultValue: Type.Unknown(),
});

const Data = (description: string) => Type.Object({}, { additionalProperties: true, description });

export function taskSchema(services: KernelServices) {
  return Type.Object({
    id: schemas.Uuid(),
    organizationId: schemas.Uuid(),
    ...parentProperties(services),
    label: Type.String(),
    status: schemas.StringEnum(TASK_STATUSES),
    dueDate: schemas.Nullable(schemas.Timestamp({ description: 'ISO 8601 UTC' })),
    assignedToId: schemas.Nullable(schemas.Uuid({ description: 'Organization user the task is assigned to' })),
    order: Type.Integer({ description: 'Position among the parent\'s tasks (lists are ordered by it)' }),
    fields: Type.Array(TaskField, { description: 'The task\'s form, from its assay type\'s standard task (none for other tasks)' }),
    data: Type.Object({}, { additionalProperties: true, description: 'What was filled in on the form: value by field name' }),
    completedAt: schemas.Nullable(schemas.Timestamp()),
    completedById: schemas.Nullable(schemas.Uuid({ description: 'Organization user who completed the task' })),
    createdById: schemas.Uuid(),
    createdAt: schemas.Timestamp(),
    updatedAt: schemas.Timestamp(),
    version: Type.Integer({ description: 'Optimistic-lock version; send it back on update to detect concurrent changes' }),
  });
}

const fields = {
  label: schemas.NotBlank({ maxLength: 500 }),
  status: schemas.StringEnum(TASK_STATUSES, { description: 'Defaults to TODO' }),
  dueDate: schemas.Nullable(schemas.DateInput()),
  assignedToId: schemas.Nullable(schemas.Uuid({ description: 'An organization user of the caller\'s organization' })),
  order: Type.Integer({ minimum: 0, maximum: 100000 }),
};

export const CreateTaskBody = Type.Object({
  label: fields.label,
  status: Type.Optional(fields.status),
  dueDate: Type.Optional(fields.dueDate),
  assignedToId: Type.Optional(fields.assignedToId),
  order: Type.Optional(fields.order),
  data: Type.Optional(Data('Values of the task\'s form fields, by name (a task made here has no form: none)')),
});

/** PUT merges: omitted fields keep their value. */
export const UpdateTaskBody = Type.Object({
  label: Type.Optional(fields.label),
  status: Type.Optional(fields.status),
  dueDate: Type.Optional(fields.dueDate),
  assignedToId: Type.Optional(fields.assignedToId),
  order: Type.Optional(fields.order),
  data: Type.Optional(Data('Merged into the current data by field name (null removes a value); checked against the task\'s fields')),
  version: Type.Optional(Type.Integer({ description: 'When given, the update fails with 409 unless it is the current version' })),
});

/** Optional body of the complete operation: COMPLETE (default), or INCOMPLETE to close it undone. */
export const CompleteBody = Type.Union([
  Type.Object({
    status: Type.Optional(schemas.StringEnum(['COMPLETE', 'INCOMPLETE'] as const)),
    data: Type.Optional(Data('Filled in as the task closes: merged as on PUT; COMPLETE needs every required field')),
  }),
  Type.Null(),
]);

export type CreateTaskBodyT = Static<typeof CreateTaskBody>;
export type UpdateTaskBodyT = Static<typeof UpdateTaskBody>;
