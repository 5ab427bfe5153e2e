import { defineEntity, p } from '../../core/public.ts';
import { lifecycleEntityProperties } from '../../lib/records/index.ts';

export const Assay = defineEntity({
  name: 'Assay',
  tableName: 'assay',
  properties: {
    id: p.uuid().primary(),
    organizationId: p.uuid(),
    studyId: p.uuid(),
    assayTypeId: p.uuid(),
    code: p.string().nullable(),
    name: p.string(),
    description: p.string().nullable(),
    startDate: p.datetime().nullable(),
    // `values` on the wire: the assay's values for its type's fields, by field name.
    fieldValues: p.json<Record<string, unknown>>(),
    ...lifecycleEntityProperties(),
  },
});
