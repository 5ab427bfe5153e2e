import { defineEntity, p } from '../../core/public.ts';
import { db } from '../../core/public.ts';

/** One direction of a relationship; every row has its inverse row on the target study. */
export const StudyRelationship = defineEntity({
  name: 'StudyRelationship',
  tableName: 'study_relationship',
  properties: {
    id: p.uuid().primary(),
    organizationId: p.uuid(),
    sourceStudyId: p.uuid(),
    targetStudyId: p.uuid(),
    type: p.string(),
    createdById: p.uuid(),
    createdAt: p.datetime().onCreate(db.creationTime),
  },
});
