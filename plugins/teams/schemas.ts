import { NotBlank, Nullable, OrganizationUserSchema, Timestamp, Type, Uuid, type Static } from '../../core/public.ts';

export const TeamSchema = Type.Object({
  id: Uuid(),
  organizationId: Uuid(),
  name: Type.String(),
  description: Nullable(Type.String()),
  active: Type.Boolean({ description: 'Inactive teams grant no project access' }),
  members: Type.Array(OrganizationUserSchema),
  createdAt: Timestamp(),
  updatedAt: Timestamp(),
  version: Type.Integer({ description: 'Optimistic-lock version; send it back on update to detect concurrent changes' }),
});

const UserIds = Type.Array(Uuid(), {
  uniqueItems: true,
  maxItems: 1000,
  description: 'Users of the caller\'s organization: user ids or organization-user ids',
});

export const CreateTeamBody = Type.Object({
  name: NotBlank({ maxLength: 255 }),
  description: Type.Optional(Nullable(Type.String({ maxLength: 10000 }))),
  active: Type.Optional(Type.Boolean({ default: true })),
  userIds: Type.Optional(UserIds),
});

/** PUT merges; `userIds`, when given, replaces the member list. */
export const UpdateTeamBody = Type.Object({
  name: Type.Optional(NotBlank({ maxLength: 255 })),
  description: Type.Optional(Nullable(Type.String({ maxLength: 10000 }))),
  active: Type.Optional(Type.Boolean()),
  userIds: Type.Optional(UserIds),
  version: Type.Optional(Type.Integer({ description: 'When given, the update fails with 409 unless it is the current version' })),
});

export const UserIdsBody = Type.Object({ userIds: Type.Array(Uuid(), { minItems: 1, uniqueItems: true, maxItems: 1000 }) });

export type TeamDto = Static<typeof TeamSchema>;
export type CreateTeamBodyT = Static<typeof CreateTeamBody>;
export type UpdateTeamBodyT = Static<typeof UpdateTeamBody>;
