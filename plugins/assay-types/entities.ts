import { defineEntity, p } from '../../core/public.ts';
import type { AssayFieldDefinition, StandardTask } from './extensions.ts';
import { db } from '../../core/public.ts';

export const AssayType = defineEntity({
  name: 'AssayType',
  tableName: 'assay_type',
  properties: {
    id: p.uuid().primary(),
    organizationId: p.uuid(),
    name: p.string(),
    description: p.string().nullable(),
    status: p.string(),
    fields: p.json<AssayFieldDefinition[]>(),
    tasks: p.json<StandardTask[]>(),
    // Null for types provisioned by the bootstrap file (no acting user).
    createdById: p.uuid().nullable(),
    createdAt: p.datetime().onCreate(db.creationTime),
    updatedAt: p.datetime().onCreate(db.creationTime).onUpdate(() => new Date()),
    version: p.integer().version(),
  },
});
