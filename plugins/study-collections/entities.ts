import { defineEntity, p } from '../../core/public.ts';
import { db } from '../../core/public.ts';

export const StudyCollection = defineEntity({
  name: 'StudyCollection',
  tableName: 'study_collection',
  properties: {
    id: p.uuid().primary(),
    organizationId: p.uuid(),
    name: p.string(),
    description: p.string().nullable(),
    visibility: p.string(),
    createdById: p.uuid(),
    createdAt: p.datetime().onCreate(db.creationTime),
    updatedAt: p.datetime().onCreate(db.creationTime).onUpdate(() => new Date()),
    version: p.integer().version(),
  },
});

/** A study in a collection (one row per pair: adding twice is a no-op). */
export const StudyCollectionStudy = defineEntity({
  name: 'StudyCollectionStudy',
  tableName: 'study_collection_study',
  properties: {
    collectionId: p.uuid().primary(),
    studyId: p.uuid().primary(),
    organizationId: p.uuid(),
    addedById: p.uuid(),
    addedAt: p.datetime().onCreate(db.creationTime),
  },
});
