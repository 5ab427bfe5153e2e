import { type KernelServices, schemas, type Static, Type } from '../../core/public.ts';
import { parentProperties } from '../../lib/records/index.ts';

export const TASK_STATUSES = ['TODO', 'IN_PROGRESS', 'COMPLETE', 'INCOMPLETE'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

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
});

/** PUT merges: omitted fields keep their value. */
export const UpdateTaskBody = Type.Object({
  label: Type.Optional(fields.label),
  status: Type.Optional(fields.status),
  dueDate: Type.Optional(fields.dueDate),
  assignedToId: Type.Optional(fields.assignedToId),
  order: Type.Optional(fields.order),
  version: Type.Optional(Type.Integer({ description: 'When given, the update fails with 409 unless it is the current version' })),
});

/** Optional body of the complete operation: COMPLETE (default), or INCOMPLETE to close it undone. */
export const CompleteBody = Type.Union([
  Type.Object({ status: Type.Optional(schemas.StringEnum(['COMPLETE', 'INCOMPLETE'] as const)) }),
  Type.Null(),
]);

export type CreateTaskBodyT = Static<typeof CreateTaskBody>;
export type UpdateTaskBodyT = Static<typeof UpdateTaskBody>;
