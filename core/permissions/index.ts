import crypto from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Actor } from '../auth/api-keys.ts';
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
    const u = actor.organizationUserId;
    // The teams first (offset 0 keeps them a subquery), then each team's grants by index: a plan
    // made blind to the caller must not walk every team grant and match them to the caller's teams.
    return sql`select gm.project_id from project_member gm where gm.organization_user_id = ${u} and gm.project_visibility = 'PRIVATE'
      union select gt.project_id from (select tm.team_id from team_member tm join team t on t.id = tm.team_id and t.active where tm.organization_user_id = ${u} offset 0) mine
        cross join lateral (select project_id from project_member g where g.team_id = mine.team_id and g.project_visibility = 'PRIVATE') gt`;
  }

  /**
   * True when the actor is a member of the project, directly or through an active team: two
   * index probes keyed on (project, user) and (user → team, project), whatever the size of
   * `project_member`.
   */
  isMember(actor: Actor, projectId: Sql): Sql {
    const u = actor.organizationUserId;
    // `offset 0` keeps each probe per row: PostgreSQL would otherwise hash the whole grant set
    // for a long list, while a page only ever checks the rows it returns (and a few more).
    return sql`(exists (select 1 from project_member pm where pm.project_id = ${projectId} and pm.organization_user_id = ${u} offset 0)
      or exists (select 1 from team_member tm join team t on t.id = tm.team_id and t.active
                   join project_member tpm on tpm.team_id = tm.team_id
                  where tm.organization_user_id = ${u} and tpm.project_id = ${projectId} offset 0))`;
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
