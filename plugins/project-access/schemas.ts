import { schemas, type Static, Type } from '../../core/public.ts';

export const Grant = Type.Object({
  id: schemas.Uuid(),
  projectId: schemas.Uuid(),
  organizationUserId: schemas.Nullable(schemas.Uuid({ description: 'Set for a grant to one organization user' })),
  teamId: schemas.Nullable(schemas.Uuid({ description: 'Set for a grant to a team' })),
  createdAt: schemas.Timestamp(),
}, { title: 'ProjectAccessGrant' });
export const GrantBody = Type.Object(
  {
    organizationUserId: Type.Optional(schemas.Uuid()),
    userId: Type.Optional(schemas.Uuid({ description: 'A user id instead of an organization-user id' })),
    teamId: Type.Optional(schemas.Uuid()),
  },
  { description: 'Exactly one of organizationUserId, userId or teamId' },
);
export const ProjectParams = Type.Object({ id: schemas.Uuid() });
export const GrantParams = Type.Object({ id: schemas.Uuid(), grantId: schemas.Uuid() });
export type GrantDto = Static<typeof Grant>;

