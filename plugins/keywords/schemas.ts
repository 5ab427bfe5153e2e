import { schemas, type Static, Type } from '../../core/public.ts';

export const keywordSchema = Type.Object({
  id: schemas.Uuid(),
  organizationId: schemas.Uuid(),
  value: Type.String({ description: 'Case-sensitive; unique within the organization' }),
  category: schemas.Nullable(Type.String({ description: 'The group the keyword belongs to (e.g. Gene, Compound); null when none' })),
  createdById: schemas.Uuid({ description: 'Organization user who created the keyword' }),
  createdAt: schemas.Timestamp(),
});

export const createBodySchema = Type.Object({
  value: schemas.NotBlank({
    maxLength: 255,
    description: 'Case-sensitive; leading and trailing white space is removed; a value the organization already has is a 409',
  }),
  category: Type.Optional(schemas.Nullable(schemas.NotBlank({ maxLength: 255, description: 'Optional group of the keyword (e.g. Gene); white space around it is removed' }))),
});

export type CreateBody = Static<typeof createBodySchema>;
