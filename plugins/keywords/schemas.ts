import { NotBlank, Timestamp, Type, Uuid, type Static } from '../../core/public.ts';

export const keywordSchema = Type.Object({
  id: Uuid(),
  organizationId: Uuid(),
  value: Type.String({ description: 'Case-sensitive; unique within the organization' }),
  createdById: Uuid({ description: 'Organization user who created the keyword' }),
  createdAt: Timestamp(),
});

export const createBodySchema = Type.Object({
  value: NotBlank({
    maxLength: 255,
    description: 'Case-sensitive; leading and trailing white space is removed; a value the organization already has is a 409',
  }),
});

export type CreateBody = Static<typeof createBodySchema>;
