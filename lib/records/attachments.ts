import { db, type KernelServices, type OperationContext, p, raw, schemas, type Sql, sql, type TObject, Type } from '../../core/public.ts';
import { parentKinds, type ParentAccess, type ParentKind } from './parents.ts';

/**
 * Shared plumbing for records attached to a parent (tasks, external links, notes, storage
 * folders): rows carry `parent_kind` and `parent_id`; routes exist once per registered parent
 * kind (`/<segment>/{<kind>Id}/tasks`, ...).
 */

/** The path parameter naming the parent: `<kind>Id`. */
export const parentParam = (parent: ParentKind) => `${parent.kind}Id`;

/** Path parameters `{ <kind>Id }`, plus the child's id parameter when given. */
export function parentParams(parent: ParentKind, childParam?: string): TObject {
  const props: Record<string, ReturnType<typeof schemas.Uuid>> = { [parentParam(parent)]: schemas.Uuid() };
  if (childParam) props[childParam] = schemas.Uuid();
  return Type.Object(props);
}

/** The parent as the actor sees it (404 naming it), from the route's parameters. */
export function parentOf(ctx: OperationContext, parent: ParentKind, params: Record<string, unknown>): Promise<ParentAccess> {
  return parent.access(ctx, String(params[parentParam(parent)]));
}

/** The parent as the actor may change it: 404 when not viewable, 403 when not a contributor. */
export async function contributableParentOf(ctx: OperationContext, parent: ParentKind, params: Record<string, unknown>): Promise<ParentAccess> {
  const access = await parentOf(ctx, parent, params);
  ctx.services.permissions.assertContributor(access);
  return access;
}

/**
 * The parent `id` for a write, pinned until the commit: its chain locked in the kernel's order
 * (its own row in `own` mode), then judged as it is now (404, 403). A delete or move of the
 * parent waits for the write, or the write for it (and then finds it gone or follows it), so no
 * attachment outlives its parent and no activity is filed where the parent no longer is. Inside
 * a write transaction.
 */
export async function lockedParent(ctx: OperationContext, parent: ParentKind, id: string, own: db.RowLock['mode'] = 'share'): Promise<ParentAccess> {
  const access = await parent.lockedAccess(ctx, id, own);
  ctx.services.permissions.assertContributor(access);
  return access;
}

/** `lockedParent` of the parent the route's parameters name. */
export function lockedParentOf(ctx: OperationContext, parent: ParentKind, params: Record<string, unknown>, own: db.RowLock['mode'] = 'share'): Promise<ParentAccess> {
  return lockedParent(ctx, parent, String(params[parentParam(parent)]), own);
}

/** SQL: rows of `alias` attached to this parent. */
export function attachedTo(alias: string, access: ParentAccess): Sql {
  return sql`${raw(alias)}.parent_kind = ${access.kind} and ${raw(alias)}.parent_id = ${access.id}`;
}

/** SQL: the actor may view the parent of the row `alias` (for look-ups by the row's own id). */
export function attachedVisible(ctx: OperationContext, alias: string): Sql {
  return sql`${raw(alias)}.organization_id = ${ctx.actor.organizationId} and ${parentKinds(ctx.services).visibleCondition(ctx, raw(`${alias}.parent_kind`), raw(`${alias}.parent_id`))}`;
}

/** Deletes a table's attached rows together with their parents (in the parent's delete transaction). */
export function cascadeWithParents(services: KernelServices, table: string): void {
  for (const parent of parentKinds(services).all()) {
    parent.beforeDelete(async (ctx, ids) => {
      await ctx.em.execute(`delete from ${table} where parent_kind = ? and parent_id in (?)`, [parent.kind, ids]);
    });
  }
}

/** The wire value of a parent kind: its name in upper case. */
export const parentType = (kind: string) => kind.toUpperCase();

/** Response properties naming the parent of an attached record. */
export function parentProperties(services: KernelServices) {
  const kinds = parentKinds(services).all().map((k) => k.kind);
  return {
    parentType: schemas.StringEnum(kinds.map(parentType), { description: 'Kind of record this is attached to' }),
    parentId: schemas.Uuid({ description: `Id of the ${alternatives(kinds)} this is attached to` }),
  };
}

/** `a, b or c`. */
function alternatives(words: string[]): string {
  return words.length < 2 ? words.join('') : `${words.slice(0, -1).join(', ')} or ${words.at(-1)}`;
}

/** The entity properties every attached record starts with (`attachedColumns` selects them). */
export const attachedProperties = () => ({
  id: p.uuid().primary(),
  organizationId: p.uuid(),
  parentKind: p.string(),
  parentId: p.uuid(),
});

/** The columns every attached row starts with, named as the entity properties. */
export const attachedColumns = (alias: string): Sql =>
  raw(`${alias}.id, ${alias}.organization_id as "organizationId", ${alias}.parent_kind as "parentKind", ${alias}.parent_id as "parentId"`);

/** An attached row as `attachedColumns` selects it (or its entity). */
export interface AttachedRow {
  id: string;
  organizationId: string;
  parentKind: string;
  parentId: string;
}

/** The DTO fields every attached record starts with. */
export function attachedDto(r: AttachedRow) {
  return { id: r.id, organizationId: r.organizationId, parentType: parentType(r.parentKind), parentId: r.parentId };
}
