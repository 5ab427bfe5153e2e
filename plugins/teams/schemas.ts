import { schemas, type Static, tables, Type } from '../../core/public.ts';

export const TeamSchema = Type.Object({
  id: schemas.Uuid(),
  organizationId: schemas.Uuid(),
  name: Type.String(),
  description: schemas.Nullable(Type.String()),
  active: Type.Boolean({ description: 'Inactive teams grant no project access' }),
  members: Type.Array(tables.OrganizationUserSchema),
  createdAt: schemas.Timestamp(),
  updatedAt: schemas.Timestamp(),
  version: Type.Integer({ description: 'Optimistic-lock version; send it back on update to detect concurrent changes' }),
});

const UserIds = Type.Array(schemas.Uuid(), {
  uniqueItems: true,
  maxItems: 1000,
  description: 'Users of the caller\'s organization: user ids or organization-user ids',
});

export const CreateTeamBody = Type.Object({
  name: schemas.NotBlank({ maxLength: 255 }),
  description: Type.Optional(schemas.Nullable(Type.String({ maxLength: 10000 }))),
  active: Type.Optional(Type.Boolean({ default: true })),
  userIds: Type.Optional(UserIds),
});

/** PUT merges; `userIds`, when given, replaces the member list. */
export const UpdateTeamBody = Type.Object({
  name: Type.Optional(schemas.NotBlank({ maxLength: 255 })),
  description: Type.Optional(schemas.Nullable(Type.String({ maxLength: 10000 }))),
  active: Type.Optional(Type.Boolean()),
  userIds: Type.Optional(UserIds),
  version: Type.Optional(Type.Integer({ description: 'When given, the update fails with 409 unless it is the current version' })),
});

export const UserIdsBody = Type.Object({ userIds: Type.Array(schemas.Uuid(), { minItems: 1, uniqueItems: true, maxItems: 1000 }) });

export type TeamDto = Static<typeof TeamSchema>;
export type CreateTeamBodyT = Static<typeof CreateTeamBody>;
export type UpdateTeamBodyT = Static<typeof UpdateTeamBody>;
