import { Type, type Static } from '@sinclair/typebox';
import { schemas } from '../../core/public.ts';

export const RELATIONSHIP_TYPES = [
  'IS_RELATED_TO',
  'IS_PARENT_OF',
  'IS_CHILD_OF',
  'IS_BLOCKING',
  'IS_BLOCKED_BY',
  'IS_PRECEDED_BY',
  'IS_SUCCEEDED_BY',
] as const;
export type RelationshipType = (typeof RELATIONSHIP_TYPES)[number];

/** The relationship created automatically on the target study for each type. */
export const INVERSE_TYPES: Record<RelationshipType, RelationshipType> = {
  IS_RELATED_TO: 'IS_RELATED_TO',
  IS_PARENT_OF: 'IS_CHILD_OF',
  IS_CHILD_OF: 'IS_PARENT_OF',
  IS_BLOCKING: 'IS_BLOCKED_BY',
  IS_BLOCKED_BY: 'IS_BLOCKING',
  IS_PRECEDED_BY: 'IS_SUCCEEDED_BY',
  IS_SUCCEEDED_BY: 'IS_PRECEDED_BY',
};

const RelationshipTypeSchema = schemas.StringEnum(RELATIONSHIP_TYPES, { description: 'How the source study relates to the target study' });

export const StudyRelationshipSchema = Type.Object({
  id: schemas.Uuid(),
  organizationId: schemas.Uuid(),
  type: RelationshipTypeSchema,
  sourceStudyId: schemas.Uuid({ description: 'The study the relationship originates from' }),
  targetStudyId: schemas.Uuid({ description: 'Study on the other end' }),
  createdById: schemas.Uuid({ description: 'Organization user who created the relationship' }),
  createdAt: schemas.Timestamp(),
});

export const CreateBody = Type.Object({
  type: RelationshipTypeSchema,
  targetStudyId: schemas.Uuid({ description: 'Study on the other end; must differ from the source and be viewable by the caller' }),
});

export const StudyParams = Type.Object({ studyId: schemas.Uuid() });
export const RelationshipParams = Type.Object({ studyId: schemas.Uuid(), relationshipId: schemas.Uuid() });

export type CreateBody = Static<typeof CreateBody>;
