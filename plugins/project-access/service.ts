import crypto from 'node:crypto';
import { db, errors, fetchPage, type OperationContext, type PageRequest, raw, sql, type Static, tables } from '../../core/public.ts';
import { lockProjectGrants, projectAccess } from '../projects/extensions.ts';
import type { GrantBody, GrantDto } from './schemas.ts';

const columns = raw(`g.id, g.project_id as "projectId", g.organization_user_id as "organizationUserId", g.team_id as "teamId", g.created_at as "createdAt"`);
const toDto = (g: Omit<GrantDto, 'createdAt'> & { createdAt: string | Date }): GrantDto => ({ ...g, createdAt: db.isoDate(g.createdAt)! });
export const grantSort = { fields: { createdAt: 'g.created_at' }, default: ['createdAt,asc'], tiebreaker: 'g.id' };

export async function list(ctx: OperationContext, projectId: string, page: PageRequest) {
  await projectAccess(ctx, projectId);
  const from = sql`from project_member g where g.project_id = ${projectId} and g.organization_id = ${ctx.actor.organizationId}`;
  const { rows, total } = await fetchPage<GrantDto>(ctx.em, { columns, from }, page);
  return { items: rows.map(toDto), total };
}

/** The organization user or team a grant body names, checked to be of the caller's organization. */
async function grantee(ctx: OperationContext, body: Static<typeof GrantBody>): Promise<{ organizationUserId: string | null; teamId: string | null }> {
  const given = (['organizationUserId', 'userId', 'teamId'] as const).filter((k) => body[k] !== undefined);
  if (given.length === 0) throw new errors.ValidationError([{ field: 'body', message: 'must give one of organizationUserId, userId or teamId' }]);
  if (given.length > 1) throw new errors.ValidationError(given.slice(1).map((field) => ({ field, message: `cannot be given together with ${given[0]} (give exactly one)` })));
  const org = ctx.actor.organizationId;
  if (body.teamId) {
    if (!(await ctx.em.findOne(tables.Team, { id: body.teamId, organizationId: org }))) {
      throw new errors.ValidationError([{ field: 'teamId', message: 'is not a team of this organization' }]);
    }
    return { organizationUserId: null, teamId: body.teamId };
  }
  // FOR SHARE: a deactivation in flight commits first (and is seen) or waits for this grant.
  const ou = await db.queryOne<{ id: string; status: string }>(ctx.em, sql`select id, status from organization_user
    where organization_id = ${org} and ${body.userId ? sql`user_id = ${body.userId}` : sql`id = ${body.organizationUserId!}`} for share`);
  if (!ou) throw new errors.ValidationError([{ field: given[0], message: 'is not a user of this organization' }]);
  // A grant to a deactivated membership would silently come back to life on reactivation.
  if (ou.status === 'INACTIVE') throw new errors.ValidationError([{ field: given[0], message: 'is an INACTIVE user of this organization' }]);
  return { organizationUserId: ou.id, teamId: null };
}

export async function grant(ctx: OperationContext, projectId: string, body: Static<typeof GrantBody>): Promise<GrantDto> {
  return db.writeTransaction(ctx.em, async (em) => {
    const tx = { ...ctx, em };
    // Locked before the checks: a project deleted meanwhile is a 404 here, not a grant left without its project.
    await lockProjectGrants(tx, projectId);
    ctx.services.permissions.assertContributor(await projectAccess(tx, projectId));
    const who = await grantee(tx, body);
    const exists = await db.queryOne(em, sql`select 1 from project_member where project_id = ${projectId}
      and ${who.teamId ? sql`team_id = ${who.teamId}` : sql`organization_user_id = ${who.organizationUserId}`}`);
    if (exists) throw new errors.ConflictError('This access is already granted');
    const g = em.create(tables.ProjectMember, { id: crypto.randomUUID(), organizationId: ctx.actor.organizationId, projectId, ...who });
    ctx.services.activity.record(em, ctx.actor, { eventType: 'project.access_granted', projectId, data: { grantId: g.id, ...who } });
    await em.flush();
    return toDto({ id: g.id, projectId, ...who, createdAt: g.createdAt });
  });
}

export async function revoke(ctx: OperationContext, projectId: string, grantId: string): Promise<void> {
  await db.writeTransaction(ctx.em, async (em) => {
    const tx = { ...ctx, em };
    await lockProjectGrants(tx, projectId);
    ctx.services.permissions.assertContributor(await projectAccess(tx, projectId));
    const g = await em.findOne(tables.ProjectMember, { id: grantId, projectId, organizationId: ctx.actor.organizationId });
    if (!g) throw new errors.NotFoundError('ProjectAccess', grantId);
    em.remove(g);
    ctx.services.activity.record(em, ctx.actor, {
      eventType: 'project.access_revoked',
      projectId,
      data: { grantId, organizationUserId: g.organizationUserId ?? null, teamId: g.teamId ?? null },
    });
  });
}

