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
 * The one permission service (README, "Permissions"). Rules become SQL conditions so list
 * queries filter visibility in the database and page totals stay exact:
 * - organization admins view and contribute to every project of their organization;
 * - PUBLIC: every active organization user views and contributes;
 * - PROTECTED: everyone views, project members (direct or through an active team) contribute;
 * - PRIVATE: only project members view and contribute.
 * Callers always add `organization_id = actor.organizationId` themselves (tenant scope first).
 */
export class PermissionService {
  /**
   * SQL subquery: ids of the projects the actor is granted, directly or through an active team.
   * Both branches start from the actor (indexes on `organization_user_id`), so it costs
   * O(the actor's grants) whatever the size of `project_member`.
   */
  grantedProjects(actor: Actor): Sql {
    const u = actor.organizationUserId;
    return sql`select gm.project_id from project_member gm where gm.organization_user_id = ${u}
      union select gt.project_id from team_member tm join team t on t.id = tm.team_id and t.active
        join project_member gt on gt.team_id = tm.team_id where tm.organization_user_id = ${u}`;
  }

  /** SQL subquery: ids of the PRIVATE projects of the actor's organization they are granted. */
  privateProjects(actor: Actor): Sql {
    return sql`select gp.id from project gp where gp.id in (${this.grantedProjects(actor)})
      and gp.visibility = 'PRIVATE' and gp.organization_id = ${actor.organizationId}`;
  }

  /**
   * True when the actor is a member of the project, directly or through an active team. Two
   * probes keyed on (project, user) and (team, project): per row an index lookup, or, when the
   * planner hashes them for a long list, one read of the actor's own grants — never of the table.
   */
  isMember(actor: Actor, projectId: Sql): Sql {
    const u = actor.organizationUserId;
    return sql`(exists (select 1 from project_member pm where pm.project_id = ${projectId} and pm.organization_user_id = ${u})
      or exists (select 1 from team_member tm join team t on t.id = tm.team_id and t.active
                   join project_member tpm on tpm.team_id = tm.team_id
                  where tm.organization_user_id = ${u} and tpm.project_id = ${projectId}))`;
  }

  canView(actor: Actor, cols: AccessColumns): Sql {
    if (actor.isAdmin) return raw('true');
    return sql`(${cols.visibility} in ('PUBLIC', 'PROTECTED') or ${this.isMember(actor, cols.projectId)})`;
  }

  canContribute(actor: Actor, cols: AccessColumns): Sql {
    if (actor.isAdmin) return raw('true');
    return sql`(${cols.visibility} = 'PUBLIC' or ${this.isMember(actor, cols.projectId)})`;
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
