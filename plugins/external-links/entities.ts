import { db, defineEntity, p } from '../../core/public.ts';

export const ExternalLink = defineEntity({
  name: 'ExternalLink',
  tableName: 'external_link',
  properties: {
    id: p.uuid().primary(),
    organizationId: p.uuid(),
    parentKind: p.string(),
    parentId: p.uuid(),
    label: p.string(),
    url: p.string(),
    createdById: p.uuid(),
    createdAt: p.datetime().onCreate(db.creationTime),
    updatedAt: p.datetime().onCreate(db.creationTime).onUpdate(() => new Date()),
    version: p.integer().version(),
  },
});
