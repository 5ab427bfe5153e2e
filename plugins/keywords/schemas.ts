import { schemas, type Static, Type } from '../../core/public.ts';

export const keywordSchema = Type.Object({
  id: schemas.Uuid(),
  organizationId: schemas.Uuid(),
  value: Type.String({ description: 'Case-sensitive; unique within the organization' }),
  createdById: schemas.Uuid({ description: 'Organization user who created the keyword' }),
  createdAt: schemas.Timestamp(),
});

export const createBodySchema = Type.Object({
  value: schemas.NotBlank({
    maxLength: 255,
    description: 'Case-sensitive; leading and trailing white space is removed; a value the organization already has is a 409',
  }),
});

export type CreateBody = Static<typeof createBodySchema>;
