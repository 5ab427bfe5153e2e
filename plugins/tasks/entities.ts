import { db, defineEntity, p } from '../../core/public.ts';
import { attachedProperties } from '../../lib/records/index.ts';
import type { AssayFieldDefinition } from '../assay-types/extensions.ts';

export const Task = defineEntity({
  name: 'Task',
  tableName: 'task',
  properties: {
    ...attachedProperties(),
    label: p.string(),
    status: p.string(),
    dueDate: p.datetime().nullable(),
    assignedToId: p.uuid().nullable(),
    position: p.integer(),
    fields: p.json<AssayFieldDefinition[]>(),
    data: p.json<Record<string, unknown>>(),
    completedAt: p.datetime().nullable(),
    completedById: p.uuid().nullable(),
    createdById: p.uuid(),
    createdAt: p.datetime().onCreate(db.creationTime),
    updatedAt: p.datetime().onCreate(db.creationTime).onUpdate(() => new Date()),
    version: p.integer().version(),
  },
});
