import { schemas, type Static, Type } from '../../core/public.ts';

const Text = (maxLength: number) => schemas.Nullable(Type.String({ maxLength }));
const Email = () => schemas.Nullable(Type.String({ format: 'email', maxLength: 254, description: 'An e-mail address' }));

export const collaboratorSchema = Type.Object({
  id: schemas.Uuid(),
  organizationId: schemas.Uuid(),
  label: Type.String(),
  organizationName: schemas.Nullable(Type.String()),
  organizationLocation: schemas.Nullable(Type.String()),
  contactPersonName: schemas.Nullable(Type.String()),
  contactEmail: schemas.Nullable(Type.String({ description: 'An e-mail address' })),
  code: schemas.Nullable(Type.String()),
  active: Type.Boolean(),
  createdById: schemas.Uuid({ description: 'Organization user who created the collaborator' }),
  createdAt: schemas.Timestamp(),
  updatedAt: schemas.Timestamp(),
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
  label: schemas.NotBlank({ maxLength: 255 }),
  ...fields,
  active: Type.Optional(Type.Boolean({ description: 'Defaults to true' })),
});

/** PUT merges: omitted fields keep their value, null clears an optional one. */
export const updateBodySchema = Type.Object({
  label: Type.Optional(schemas.NotBlank({ maxLength: 255 })),
  ...fields,
  active: Type.Optional(Type.Boolean()),
  version: Type.Optional(Type.Integer({ description: 'When given, the update fails with 409 unless it is the current version' })),
});

export type CreateBody = Static<typeof createBodySchema>;
