import { NotBlank, Nullable, Timestamp, Type, Uuid, type Static } from '../../core/public.ts';

const Text = (maxLength: number) => Nullable(Type.String({ maxLength }));
const Email = () => Nullable(Type.String({ format: 'email', maxLength: 254, description: 'An e-mail address' }));

export const collaboratorSchema = Type.Object({
  id: Uuid(),
  organizationId: Uuid(),
  label: Type.String(),
  organizationName: Nullable(Type.String()),
  organizationLocation: Nullable(Type.String()),
  contactPersonName: Nullable(Type.String()),
  contactEmail: Nullable(Type.String({ description: 'An e-mail address' })),
  code: Nullable(Type.String()),
  active: Type.Boolean(),
  createdById: Uuid({ description: 'Organization user who created the collaborator' }),
  createdAt: Timestamp(),
  updatedAt: Timestamp(),
  version: Type.Integer({ description: 'Optimistic-lock version; send it back on update to detect concurrent changes' }),
});

/** The writable fields; only `label` is required, the others are optional and may be null. */
const fields = {
  organizationName: Type.Optional(Text(255)),
  organizationLocation: Type.Optional(Text(255)),
  contactPersonName: Type.Optional(Text(255)),
  contactEmail: Type.Optional(Email()),
  code: Type.Optional(Text(64)),
};

export const createBodySchema = Type.Object({
  label: NotBlank({ maxLength: 255 }),
  ...fields,
  active: Type.Optional(Type.Boolean({ description: 'Defaults to true' })),
});

/** PUT merges: omitted fields keep their value, null clears an optional one. */
export const updateBodySchema = Type.Object({
  label: Type.Optional(NotBlank({ maxLength: 255 })),
  ...fields,
  active: Type.Optional(Type.Boolean()),
  version: Type.Optional(Type.Integer({ description: 'When given, the update fails with 409 unless it is the current version' })),
});

export type CreateBody = Static<typeof createBodySchema>;
