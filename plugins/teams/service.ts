import crypto from 'node:crypto';
import { db, errors, fetchPage, type OperationContext, type PageRequest, raw, sql, tables } from '../../core/public.ts';
import { mergeUpdate } from '../../lib/records/index.ts';
import type { CreateTeamBodyT, TeamDto, UpdateTeamBodyT } from './schemas.ts';

const columns = raw(`t.id, t.organization_id as "organizationId", t.name, t.description, t.active,
  t.created_at as "createdAt", t.updated_at as "updatedAt", t.version`);

interface TeamShape {
  id: string;
  organizationId: string;
  name: string;
  description?: string | null;
  active: boolean;
  createdAt: Date | string;
  updatedAt: Date | string;
  version: number;
}

export const teamSort = {
  fields: { name: 't.name', createdAt: 't.created_at', updatedAt: 't.updated_at' },
  default: ['name,asc'],
  tiebreaker: 't.id',
};

/** The member list a create or update asks for, if any, and the field that gave it (errors name that field). */
interface RequestedMembers {
  ids: string[];
  field: 'userIds' | 'members';
}

function requestedMembers(body: CreateTeamBodyT | UpdateTeamBodyT): RequestedMembers | undefined {
  if (body.members === undefined) return body.userIds && { ids: body.userIds, field: 'userIds' };
  if (body.userIds !== undefined) throw new errors.ValidationError([{ field: 'members', message: 'give the member list as userIds or as members, not both' }]);
  const ids = body.members.map((m, i) => {
    const id = typeof m === 'string' ? m : (m.id ?? m.userId);
    if (!id) throw new errors.ValidationError([{ field: `members.${i}`, message: 'must be an id or an object with id or userId' }]);
    return id;
  });
  return { ids: [...new Set(ids)], field: 'members' };
}

export class TeamService {
  /** Teams with their members: one query for the teams, one for all their members. */
  async #withMembers(ctx: OperationContext, teams: TeamShape[]): Promise<TeamDto[]> {
    if (teams.length === 0) return [];
    const rows = await db.query<tables.OrganizationUserRow & { team_id: string }>(
      ctx.em,
      sql`select tm.team_id, ${tables.organizationUserColumns} from team_member tm
            join organization_user ou on ou.id = tm.organization_user_id
            join app_user u on u.id = ou.user_id
           where tm.team_id in (${teams.map((t) => t.id)})
           order by u.display_name, ou.id`,
    );
    return teams.map((t) => ({
      id: t.id,
      organizationId: t.organizationId,
      name: t.name,
      description: t.description ?? null,
      active: t.active,
      members: rows.filter((r) => r.team_id === t.id).map(tables.toOrganizationUserDto),
      createdAt: db.isoDate(t.createdAt)!,
      updatedAt: db.isoDate(t.updatedAt)!,
      version: t.version,
    }));
  }

  async list(ctx: OperationContext, page: PageRequest) {
    const from = sql`from team t where t.organization_id = ${ctx.actor.organizationId}`;
    const { rows, total } = await fetchPage<TeamShape>(ctx.em, { columns, from }, page);
    return { items: await this.#withMembers(ctx, rows), total };
  }

  async get(ctx: OperationContext, id: string): Promise<TeamDto> {
    const [dto] = await this.#withMembers(ctx, [await this.#find(ctx, id)]);
    return dto;
  }

  async #find(ctx: OperationContext, id: string) {
    const team = await ctx.em.findOne(tables.Team, { id, organizationId: ctx.actor.organizationId });
    if (!team) throw new errors.NotFoundError('Team', id);
    return team;
  }

  /**
   * The team for a write, its row locked first: writers of one team run one after the other, each
   * reading the members the previous one left (an `If-Match` is checked once the lock is held).
   */
  async #lock(ctx: OperationContext, id: string) {
    await db.query(ctx.em, sql`select 1 from team where id = ${id} and organization_id = ${ctx.actor.organizationId} for no key update`);
    await db.recordLocked(ctx.em);
    return this.#find(ctx, id);
  }

  /**
   * Organization-user ids for the requested user or organization-user ids; anything else is a 400
   * naming the field the request used. `joining` is false for removals; otherwise an INACTIVE user who is not in `current` already
   * is a 400 too (the grant would come back to life on reactivation).
   */
  async #members(ctx: OperationContext, { ids: given, field }: RequestedMembers, joining: boolean, current: string[] = []): Promise<string[]> {
    if (given.length === 0) return [];
    // UUIDs arrive in either case (the schema's format allows both); the database gives lower case.
    const ids = given.map((id) => id.toLowerCase());
    // FOR SHARE: a deactivation in flight commits first (and is seen) or waits for this write.
    const rows = await db.query<{ id: string; user_id: string; status: string }>(
      ctx.em,
      sql`select ou.id, ou.user_id, ou.status from organization_user ou
           where ou.organization_id = ${ctx.actor.organizationId} and (ou.id in (${ids}) or ou.user_id in (${ids}))
           order by ou.id for share`,
    );
    const row = (id: string) => rows.find((r) => r.id === id || r.user_id === id);
    const problems = ids.flatMap((id) => {
      const r = row(id);
      if (!r) return [{ field, message: `${id} is not a user of this organization` }];
      if (joining && r.status === 'INACTIVE' && !current.includes(r.id)) return [{ field, message: `${id} is an INACTIVE user of this organization` }];
      return [];
    });
    if (problems.length) throw new errors.ValidationError(problems);
    return [...new Set(ids.map((id) => row(id)!.id))];
  }

  async #current(ctx: OperationContext, teamId: string): Promise<string[]> {
    return (await ctx.em.find(tables.TeamMember, { teamId })).map((m) => m.organizationUserId);
  }

  /**
   * Adds and removes members, recording each direction as GOVERNANCE activity; true when the
   * members changed. They are part of the team's representation, so a writer of an existing team
   * then touches it (`updatedAt` and `version` move: an update that sends the version it read gets
   * 409 after another admin changed the members); a team just created keeps version 1.
   */
  async #changeMembers(ctx: OperationContext, teamId: string, add: string[], remove: string[]): Promise<boolean> {
    const current = new Set(await this.#current(ctx, teamId));
    const added = add.filter((id) => !current.has(id));
    const removed = remove.filter((id) => current.has(id));
    for (const organizationUserId of added) ctx.em.create(tables.TeamMember, { teamId, organizationUserId });
    if (removed.length) await ctx.em.nativeDelete(tables.TeamMember, { teamId, organizationUserId: { $in: removed } });
    if (added.length) ctx.services.activity.record(ctx.em, ctx.actor, { eventType: 'team.members_added', data: { teamId, organizationUserIds: added } });
    if (removed.length) ctx.services.activity.record(ctx.em, ctx.actor, { eventType: 'team.members_removed', data: { teamId, organizationUserIds: removed } });
    return added.length + removed.length > 0;
  }

  async create(ctx: OperationContext, body: CreateTeamBodyT): Promise<TeamDto> {
    ctx.services.permissions.assertAdmin(ctx.actor);
    const requested = requestedMembers(body);
    const id = await db.writeTransaction(ctx.em, async (em) => {
      const tx = { ...ctx, em };
      const members = requested ? await this.#members(tx, requested, true) : [];
      const team = em.create(tables.Team, {
        id: crypto.randomUUID(),
        organizationId: ctx.actor.organizationId,
        name: body.name,
        description: body.description ?? null,
        active: body.active ?? true,
      });
      ctx.services.activity.record(em, ctx.actor, { eventType: 'team.created', data: { teamId: team.id, name: team.name } });
      await em.flush();
      await this.#changeMembers(tx, team.id, members, []);
      return team.id;
    });
    return db.readAfterCommit(() => this.get(ctx, id));
  }

  async update(ctx: OperationContext, id: string, body: UpdateTeamBodyT): Promise<TeamDto> {
    // Read from the body before any lock, as the schema's own checks are.
    const requested = requestedMembers(body);
    await db.writeTransaction(ctx.em, async (em) => {
      const tx = { ...ctx, em };
      // Found first: another organization's team is a 404 for every key, never a 403 (spec: not viewable → 404).
      const team = await this.#lock(tx, id);
      ctx.services.permissions.assertAdmin(ctx.actor);
      const changed = mergeUpdate('team', team, body, ['name', 'description', 'active'], {});
      if (changed.length) ctx.services.activity.record(em, ctx.actor, { eventType: 'team.updated', data: { teamId: id, fields: changed } });
      if (requested) {
        const current = await this.#current(tx, id);
        const wanted = await this.#members(tx, requested, true, current);
        if (await this.#changeMembers(tx, id, wanted, current.filter((m) => !wanted.includes(m)))) team.updatedAt = new Date();
      }
    });
    return this.get(ctx, id);
  }

  async addUsers(ctx: OperationContext, id: string, userIds: string[]): Promise<TeamDto> {
    return this.#editMembers(ctx, id, userIds, 'add');
  }

  async removeUsers(ctx: OperationContext, id: string, userIds: string[]): Promise<TeamDto> {
    return this.#editMembers(ctx, id, userIds, 'remove');
  }

  async #editMembers(ctx: OperationContext, id: string, userIds: string[], direction: 'add' | 'remove'): Promise<TeamDto> {
    await db.writeTransaction(ctx.em, async (em) => {
      const tx = { ...ctx, em };
      const team = await this.#lock(tx, id);
      ctx.services.permissions.assertAdmin(ctx.actor);
      const current = direction === 'add' ? await this.#current(tx, id) : [];
      const members = await this.#members(tx, { ids: userIds, field: 'userIds' }, direction === 'add', current);
      if (await this.#changeMembers(tx, id, direction === 'add' ? members : [], direction === 'remove' ? members : [])) team.updatedAt = new Date();
    });
    return this.get(ctx, id);
  }
}
