import { defineEntity, lifecycleEntityProperties, p } from '../../core/public.ts';

export const Study = defineEntity({
  name: 'Study',
  tableName: 'study',
  properties: {
    id: p.uuid().primary(),
    organizationId: p.uuid(),
    projectId: p.uuid(),
    name: p.string(),
    description: p.string().nullable(),
    startDate: p.datetime().nullable(),
    ...lifecycleEntityProperties(),
  },
});
