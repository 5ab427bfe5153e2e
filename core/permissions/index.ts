import crypto from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { activeTeamIds, type Actor } from '../auth/api-keys.ts';
import { ForbiddenError } from '../errors.ts';
import { ProjectMember } from '../entities/index.ts';
import { raw, sql, type Sql } from '../db/sql.ts';

export const VISIBILITIES = ['PUBLIC', 'PROTECTED', 'PRIVATE'] as const;
export type Visibility = (typeof VISIBILITIES)[number];

/** Where a record's access is decided: its project's visibility column and id (SQL expressions). */
export interface AccessColumns {
  visibility: Sql;
  projectId: Sql;
}

/**
 * The one permission service (docs/permissions.md). Rules become SQL conditions so list
 * queries filter visibility in the database and page totals stay exact:
 * - organization admins view and contribute to every project of their organization;
 * - PUBLIC and PROTECTED: every active organization user views;
 * - PRIVATE: only project members (direct or through an active team) view;
 * - only project members contribute, whatever the visibility (spec: "Contributor = project
 *   member or higher"; "create, update, delete, status and archive require project membership").
 * Callers always add `organization_id = actor.organizationId` themselves (tenant scope first).
 */
export class PermissionService {
  /**
   * SQL subquery: ids of the PRIVATE projects the actor is granted. Grants carry their
   * project's visibility (kept by the projects plugin), so this reads one index range per
   * grant source: O(the actor's PRIVATE grants).
   */
  privateProjects(actor: Actor): Sql {
    const direct = sql`select gm.project_id from project_member gm where gm.organization_user_id = ${actor.organizationUserId} and gm.project_visibility = 'PRIVATE'`;
    const teams = actorTeams(actor);
    if (!teams) return direct;
    // Team by team (index probes): a plan made blind to the caller must not walk every team grant.
    return sql`${direct} union select gt.project_id from unnest(${teams}) mine (team_id)
        cross join lateral (select project_id from project_member g where g.team_id = mine.team_id and g.project_visibility = 'PRIVATE') gt`;
  }

  /**
   * True when the actor is a member of the project, directly or through an active team: index
   * probes keyed on (project, user) and (project, team), whatever the size of `project_member`.
   */
  isMember(actor: Actor, projectId: Sql): Sql {
    // `offset 0` keeps each probe per row: PostgreSQL would otherwise hash the whole grant set
    // for a long list, while a page only ever checks the rows it returns (and a few more).
    const direct = sql`exists (select 1 from project_member pm where pm.project_id = ${projectId} and pm.organization_user_id = ${actor.organizationUserId} offset 0)`;
    const teams = actorTeams(actor);
    if (!teams) return direct;
    return sql`(${direct} or exists (select 1 from project_member tpm where tpm.project_id = ${projectId} and tpm.team_id = any (${teams}) offset 0))`;
  }

  canView(actor: Actor, cols: AccessColumns): Sql {
    if (actor.isAdmin) return raw('true');
    return sql`(${cols.visibility} in ('PUBLIC', 'PROTECTED') or ${this.isMember(actor, cols.projectId)})`;
  }

  canContribute(actor: Actor, cols: AccessColumns): Sql {
    if (actor.isAdmin) return raw('true');
    return this.isMember(actor, cols.projectId);
  }

  /** For a record already known to be viewable: 403 (empty body) unless the actor may contribute. */
  assertContributor(access: { canContribute: boolean }): void {
    if (!access.canContribute) throw new ForbiddenError();
  }

  assertAdmin(actor: Actor): void {
    if (!actor.isAdmin) throw new ForbiddenError();
  }

  /** Makes an organization user a direct member of a project (idempotent). */
  async addMember(em: EntityManager, actor: Actor, projectId: string, organizationUserId: string): Promise<void> {
    const existing = await em.findOne(ProjectMember, { projectId, organizationUserId });
    if (existing) return;
    em.create(ProjectMember, {
      id: crypto.randomUUID(),
      organizationId: actor.organizationId,
      projectId,
      organizationUserId,
      teamId: null,
    });
  }

  /** Removes every access grant of a deleted project. */
  async removeProject(em: EntityManager, projectId: string): Promise<void> {
    await em.nativeDelete(ProjectMember, { projectId });
  }
}

/**
 * SQL uuid[]: the actor's active teams, or undefined when the actor is in none. Authentication
 * reads them with the key (app/http/auth-cache.ts drops the key when they change), so a member
 * of no team costs no team lookup at all and a member of some costs one array parameter; an
 * actor made without them (a webhook's or a job's) looks them up in the statement.
 */
export function actorTeams(actor: Actor): Sql | undefined {
  if (!actor.teamIds) {
    return activeTeamIds(sql`${actor.organizationUserId}`);
  }
  // One text parameter, not a list: the statement's text (and its prepared plan) stays the same whatever the number of teams.
  return actor.teamIds.length ? sql`${`{${actor.teamIds.join(',')}}`}::uuid[]` : undefined;
}
