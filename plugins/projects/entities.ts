import { defineEntity, p } from '../../core/public.ts';
import { lifecycleEntityProperties } from '../../lib/records/index.ts';

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
    ...lifecycleEntityProperties(),
  },
});
