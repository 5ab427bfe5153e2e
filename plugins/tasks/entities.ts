import { db, defineEntity, p } from '../../core/public.ts';

export const Task = defineEntity({
  name: 'Task',
  tableName: 'task',
  // The attachment and audit columns are those of every attached record (external links too): each entity still lists its own table.
  properties: {
    id: p.uuid().primary(),
    organizationId: p.uuid(),
    parentKind: p.string(),
    parentId: p.uuid(),
    label: p.string(),
    status: p.string(),
    dueDate: p.datetime().nullable(),
    assignedToId: p.uuid().nullable(),
    position: p.integer(),
    completedAt: p.datetime().nullable(),
    completedById: p.uuid().nullable(),
    createdById: p.uuid(),
    createdAt: p.datetime().onCreate(db.creationTime),
    updatedAt: p.datetime().onCreate(db.creationTime).onUpdate(() => new Date()),
    version: p.integer().version(),
  },
});
