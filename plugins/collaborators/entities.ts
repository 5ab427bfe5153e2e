import { defineEntity, p } from '../../core/public.ts';
import { db } from '../../core/public.ts';

export const Collaborator = defineEntity({
  name: 'Collaborator',
  tableName: 'collaborator',
  properties: {
    id: p.uuid().primary(),
    organizationId: p.uuid(),
    label: p.string(),
    organizationName: p.string().nullable(),
    organizationLocation: p.string().nullable(),
    contactPersonName: p.string().nullable(),
    contactEmail: p.string().nullable(),
    code: p.string().nullable(),
    active: p.boolean(),
    createdById: p.uuid(),
    createdAt: p.datetime().onCreate(db.creationTime),
    updatedAt: p.datetime().onCreate(db.creationTime).onUpdate(() => new Date()),
    version: p.integer().version(),
  },
});
