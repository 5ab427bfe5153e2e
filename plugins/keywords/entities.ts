import { db, defineEntity, p } from '../../core/public.ts';

export const Keyword = defineEntity({
  name: 'Keyword',
  tableName: 'keyword',
  properties: {
    id: p.uuid().primary(),
    organizationId: p.uuid(),
    value: p.string(),
    category: p.string().nullable(),
    createdById: p.uuid(),
    createdAt: p.datetime().onCreate(db.creationTime),
  },
});
