import { raw, sql, type Actor, type Sql } from '../../core/public.ts';

/**
 * Access to a study collection (README, "Permissions"): its own visibility and its owner (the
 * creator's organization user) decide, not a project. Organization admins view and change every
 * collection of their organization. Offered to other plugins (e.g. an activity feed) as SQL.
 */

/** SQL condition: the actor may view the collection aliased `alias` (tenant scope included). */
export function collectionVisibleTo(actor: Actor, alias: string): Sql {
  const c = raw(alias);
  const scope = sql`${c}.organization_id = ${actor.organizationId}`;
  if (actor.isAdmin) return scope;
  return sql`${scope} and (${c}.visibility in ('PUBLIC', 'PROTECTED') or ${c}.created_by_id = ${actor.organizationUserId})`;
}

/** SQL expression: the actor may change the collection (fields and studies): PUBLIC, own, or admin. */
export function collectionChangeableBy(actor: Actor, alias: string): Sql {
  if (actor.isAdmin) return raw('true');
  const c = raw(alias);
  return sql`(${c}.visibility = 'PUBLIC' or ${c}.created_by_id = ${actor.organizationUserId})`;
}

/** Owner-only decisions (visibility changes, delete): the creator or an organization admin. */
export function ownsCollection(actor: Actor, collection: { createdById: string }): boolean {
  return actor.isAdmin || collection.createdById === actor.organizationUserId;
}
