import { db, defineEntity, p } from '../../core/public.ts';
import { attachedProperties } from '../../lib/records/index.ts';

export const ExternalLink = defineEntity({
  name: 'ExternalLink',
  tableName: 'external_link',
  properties: {
    ...attachedProperties(),
    label: p.string(),
    url: p.string(),
    createdById: p.uuid(),
    createdAt: p.datetime().onCreate(db.creationTime),
    updatedAt: p.datetime().onCreate(db.creationTime).onUpdate(() => new Date()),
    version: p.integer().version(),
  },
});
