import { defineEntity, p } from '../../core/public.ts';

export const Study = defineEntity({
  name: 'Study',
  tableName: 'study',
  properties: {
    id: p.uuid().primary(),
    organizationId: p.uuid(),
    projectId: p.uuid(),
    name: p.string(),
    description: p.string().nullable(),
    status: p.string(),
    startDate: p.datetime().nullable(),
    archived: p.boolean(),
    createdById: p.uuid(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()).onUpdate(() => new Date()),
    version: p.integer().version(),
  },
});
