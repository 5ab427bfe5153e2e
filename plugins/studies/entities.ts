import { defineEntity, p } from '../../core/public.ts';
import { lifecycleEntityProperties } from '../../lib/records/index.ts';

export const Study = defineEntity({
  name: 'Study',
  tableName: 'study',
  properties: {
    id: p.uuid().primary(),
    organizationId: p.uuid(),
    projectId: p.uuid(),
    code: p.string().nullable(),
    name: p.string(),
    description: p.string().nullable(),
    startDate: p.datetime().nullable(),
    ...lifecycleEntityProperties(),
  },
});
