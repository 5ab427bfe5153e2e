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

/**
 * The member list as a team response shows it (`members`), for a client that reads a team, edits
 * it and writes it back: each item an id or a member object (its `id`, else its `userId`).
 */
const Members = Type.Array(Type.Union([schemas.Uuid(), Type.Object({ id: Type.Optional(schemas.Uuid()), userId: Type.Optional(schemas.Uuid()) })]), {
  maxItems: 1000,
  description: 'The member list in the form team responses give it; an alternative to `userIds` (not both)',
});

export const CreateTeamBody = Type.Object({
  name: schemas.NotBlank({ maxLength: 255 }),
  description: Type.Optional(schemas.Nullable(Type.String({ maxLength: 10000 }))),
  active: Type.Optional(Type.Boolean({ default: true })),
  userIds: Type.Optional(UserIds),
  members: Type.Optional(Members),
});

/** PUT merges; `userIds`, when given, replaces the member list. */
export const UpdateTeamBody = Type.Object({
  name: Type.Optional(schemas.NotBlank({ maxLength: 255 })),
  description: Type.Optional(schemas.Nullable(Type.String({ maxLength: 10000 }))),
  active: Type.Optional(Type.Boolean()),
  userIds: Type.Optional(UserIds),
  members: Type.Optional(Members),
  version: Type.Optional(Type.Integer({ description: 'When given, the update fails with 409 unless it is the current version' })),
});

export const UserIdsBody = Type.Object({ userIds: Type.Array(schemas.Uuid(), { minItems: 1, uniqueItems: true, maxItems: 1000 }) });

export type TeamDto = Static<typeof TeamSchema>;
export type CreateTeamBodyT = Static<typeof CreateTeamBody>;
export type UpdateTeamBodyT = Static<typeof UpdateTeamBody>;
