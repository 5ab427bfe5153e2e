import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { schemas, VISIBILITIES } from '../../core/public.ts';

const Visibility = schemas.StringEnum(VISIBILITIES, { description: 'Who may view the collection (README, "Permissions")' });

/** A collection as lists return it (and the head of GET /study-collections/{id}). */
export const StudyCollectionSchema = Type.Object({
  id: schemas.Uuid(),
  organizationId: schemas.Uuid(),
  name: Type.String(),
  description: schemas.Nullable(Type.String()),
  visibility: Visibility,
  studyCount: Type.Integer({ description: 'Number of studies in the collection that the caller may view' }),
  createdById: schemas.Uuid({ description: 'Organization user who created (owns) the collection' }),
  createdAt: schemas.Timestamp(),
  updatedAt: schemas.Timestamp(),
  version: Type.Integer({ description: 'Optimistic-lock version; send it back on update to detect concurrent changes' }),
}, { title: 'StudyCollectionSummary' });

/** A fetched collection: the list item plus its studies (only those the caller may view). */
export function collectionDetailSchema(study: TSchema) {
  return Type.Object({
    ...StudyCollectionSchema.properties,
    studies: Type.Array(study, { description: 'The studies of the collection the caller may view, as GET /studies/{id} returns them' }),
  }, { title: 'StudyCollection' });
}

export const CreateBody = Type.Object({
  name: schemas.NotBlank({ maxLength: 255 }),
  description: Type.Optional(schemas.Nullable(Type.String({ maxLength: 10000 }))),
  visibility: Type.Optional(schemas.StringEnum(VISIBILITIES, { description: 'Who may view the collection; defaults to PRIVATE' })),
});

/** PUT merges: omitted fields keep their value; present ones follow the create rules. */
export const UpdateBody = Type.Object({
  name: Type.Optional(schemas.NotBlank({ maxLength: 255 })),
  description: Type.Optional(schemas.Nullable(Type.String({ maxLength: 10000 }))),
  visibility: Type.Optional(schemas.StringEnum(VISIBILITIES, { description: 'Changed only by the owner or an organization admin' })),
  version: Type.Optional(Type.Integer({ description: 'When given, the update fails with 409 unless it is the current version' })),
});

export const MembershipParams = Type.Object({ id: schemas.Uuid(), studyId: schemas.Uuid() });

export type CreateBody = Static<typeof CreateBody>;
export type UpdateBody = Static<typeof UpdateBody>;
