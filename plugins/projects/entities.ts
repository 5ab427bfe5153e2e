import { defineEntity, p } from '../../core/public.ts';

export const Project = defineEntity({
  name: 'Project',
  tableName: 'project',
  properties: {
    id: p.uuid().primary(),
    organizationId: p.uuid(),
    code: p.string(),
    name: p.string(),
    description: p.string(),
    visibility: p.string(),
    status: p.string(),
    archived: p.boolean(),
    createdById: p.uuid(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()).onUpdate(() => new Date()),
    version: p.integer().version(),
  },
});
