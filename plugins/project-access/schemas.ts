import { Nullable, Timestamp, Type, Uuid, type Static } from '../../core/public.ts';

export const Grant = Type.Object({
  id: Uuid(),
  projectId: Uuid(),
  organizationUserId: Nullable(Uuid({ description: 'Set for a grant to one organization user' })),
  teamId: Nullable(Uuid({ description: 'Set for a grant to a team' })),
  createdAt: Timestamp(),
}, { title: 'ProjectAccessGrant' });
export const GrantBody = Type.Object(
  {
    organizationUserId: Type.Optional(Uuid()),
    userId: Type.Optional(Uuid({ description: 'A user id instead of an organization-user id' })),
    teamId: Type.Optional(Uuid()),
  },
  { description: 'Exactly one of organizationUserId, userId or teamId' },
);
export const ProjectParams = Type.Object({ id: Uuid() });
export const GrantParams = Type.Object({ id: Uuid(), grantId: Uuid() });
export type GrantDto = Static<typeof Grant>;

