import crypto from 'node:crypto';
import {
  writeTransaction,
  defineRead,
  definePlugin,
  defineWrite,
  fetchPage,
  isoDate,
  Nullable,
  NotFoundError,
  OrganizationUser,
  ProjectMember,
  queryOne,
  raw,
  sql,
  Team,
  Timestamp,
  Type,
  Uuid,
  ValidationError,
  ConflictError,
  type OperationContext,
  type PageRequest,
  type Static,
} from '../../core/public.ts';
import { lockProjectGrants, projectAccess } from '../projects/extensions.ts';

/**
 * Project access grants (an extension of v1: the spec says teams can be granted access to
 * projects but shows no endpoint). A grant makes an organization user, or every member of a
 * team, a member of the project; the permission service reads grants on every request.
 */
const Grant = Type.Object({
  id: Uuid(),
  projectId: Uuid(),
  organizationUserId: Nullable(Uuid({ description: 'Set for a grant to one organization user' })),
  teamId: Nullable(Uuid({ description: 'Set for a grant to a team' })),
  createdAt: Timestamp(),
}, { title: 'ProjectAccessGrant' });
const GrantBody = Type.Object(
  {
    organizationUserId: Type.Optional(Uuid()),
    userId: Type.Optional(Uuid({ description: 'A user id instead of an organization-user id' })),
    teamId: Type.Optional(Uuid()),
  },
  { description: 'Exactly one of organizationUserId, userId or teamId' },
);
const ProjectParams = Type.Object({ id: Uuid() });
const GrantParams = Type.Object({ id: Uuid(), grantId: Uuid() });
type GrantDto = Static<typeof Grant>;

const columns = raw(`g.id, g.project_id as "projectId", g.organization_user_id as "organizationUserId", g.team_id as "teamId", g.created_at as "createdAt"`);
const toDto = (g: Omit<GrantDto, 'createdAt'> & { createdAt: string | Date }): GrantDto => ({ ...g, createdAt: isoDate(g.createdAt)! });
const sort = { fields: { createdAt: 'g.created_at' }, default: ['createdAt,asc'], tiebreaker: 'g.id' };
const tags = ['Project access'];

async function list(ctx: OperationContext, projectId: string, page: PageRequest) {
  await projectAccess(ctx, projectId);
  const from = sql`from project_member g where g.project_id = ${projectId} and g.organization_id = ${ctx.actor.organizationId}`;
  const { rows, total } = await fetchPage<GrantDto>(ctx.em, { columns, from }, page);
  return { items: rows.map(toDto), total };
}

/** The organization user or team a grant body names, checked to be of the caller's organization. */
async function grantee(ctx: OperationContext, body: Static<typeof GrantBody>): Promise<{ organizationUserId: string | null; teamId: string | null }> {
  const given = (['organizationUserId', 'userId', 'teamId'] as const).filter((k) => body[k] !== undefined);
  if (given.length !== 1) throw new ValidationError('Give exactly one of organizationUserId, userId or teamId');
  const org = ctx.actor.organizationId;
  if (body.teamId) {
    if (!(await ctx.em.findOne(Team, { id: body.teamId, organizationId: org }))) {
      throw new ValidationError([{ field: 'teamId', message: 'is not a team of this organization' }]);
    }
    return { organizationUserId: null, teamId: body.teamId };
  }
  const where = body.userId ? { userId: body.userId, organizationId: org } : { id: body.organizationUserId!, organizationId: org };
  const ou = await ctx.em.findOne(OrganizationUser, where);
  if (!ou) throw new ValidationError([{ field: given[0], message: 'is not a user of this organization' }]);
  // A grant to a deactivated membership would silently come back to life on reactivation.
  if (ou.status === 'INACTIVE') throw new ValidationError([{ field: given[0], message: 'is an INACTIVE user of this organization' }]);
  return { organizationUserId: ou.id, teamId: null };
}

async function grant(ctx: OperationContext, projectId: string, body: Static<typeof GrantBody>): Promise<GrantDto> {
  return writeTransaction(ctx.em, async (em) => {
    const tx = { ...ctx, em };
    ctx.services.permissions.assertContributor(await projectAccess(tx, projectId));
    await lockProjectGrants(tx, projectId);
    const who = await grantee(tx, body);
    const exists = await queryOne(em, sql`select 1 from project_member where project_id = ${projectId}
      and ${who.teamId ? sql`team_id = ${who.teamId}` : sql`organization_user_id = ${who.organizationUserId}`}`);
    if (exists) throw new ConflictError('This access is already granted');
    const g = em.create(ProjectMember, { id: crypto.randomUUID(), organizationId: ctx.actor.organizationId, projectId, ...who });
    ctx.services.activity.record(em, ctx.actor, { eventType: 'project.access_granted', projectId, data: { grantId: g.id, ...who } });
    await em.flush();
    return toDto({ id: g.id, projectId, ...who, createdAt: g.createdAt });
  });
}

async function revoke(ctx: OperationContext, projectId: string, grantId: string): Promise<void> {
  await writeTransaction(ctx.em, async (em) => {
    const tx = { ...ctx, em };
    ctx.services.permissions.assertContributor(await projectAccess(tx, projectId));
    await lockProjectGrants(tx, projectId);
    const g = await em.findOne(ProjectMember, { id: grantId, projectId, organizationId: ctx.actor.organizationId });
    if (!g) throw new NotFoundError('ProjectAccess', grantId);
    em.remove(g);
    ctx.services.activity.record(em, ctx.actor, {
      eventType: 'project.access_revoked',
      projectId,
      data: { grantId, organizationUserId: g.organizationUserId ?? null, teamId: g.teamId ?? null },
    });
  });
}

export default definePlugin({
  name: 'project-access',
  version: '1.0.0',
  description: 'List, grant and revoke project access for organization users and teams (extension of v1)',
  tags: {
    'Project access': 'Grants of a project to organization users and teams (extension of v1).',
  },
  dependsOn: ['projects', 'teams'],
  events: { 'project.access_granted': 'GOVERNANCE', 'project.access_revoked': 'GOVERNANCE' },
  register(ctx) {
    ctx.read(
      defineRead({
        name: 'list_project_access',
        description: 'List who has been granted access to a project (extension of v1).',
        path: '/projects/:id/access',
        tags,
        params: ProjectParams,
        response: Grant,
        paged: { sort },
        // Not one of the spec's 52 agent tools.
        tool: false,
        run: (c, { id }, page) => list(c, id, page),
      }),
    );
    ctx.write(
      defineWrite({
        method: 'POST',
        operationId: 'grant_project_access',
        description: 'Grant an organization user or a team access to a project (extension of v1). Contributors only.',
        path: '/projects/:id/access',
        tags,
        params: ProjectParams,
        body: GrantBody,
        status: 201,
        errors: [403, 409],
        response: Grant,
        run: (c, { params, body }) => grant(c, params.id, body),
      }),
    );
    ctx.write(
      defineWrite({
        method: 'DELETE',
        operationId: 'revoke_project_access',
        description: 'Revoke a project access grant (extension of v1). Contributors only.',
        path: '/projects/:id/access/:grantId',
        tags,
        params: GrantParams,
        status: 204,
        errors: [403],
        run: (c, { params }) => revoke(c, params.id, params.grantId),
      }),
    );
  },
});
