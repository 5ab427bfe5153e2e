import { db, errors, fetchPage, type OperationContext, type PageRequest, raw, sql, tables } from '../../core/public.ts';

// Users are visible through their membership in the caller's organization only.
const scope = (organizationId: string) =>
  sql`from organization_user ou join app_user u on u.id = ou.user_id where ou.organization_id = ${organizationId}`;

export const userSort = {
  fields: { displayName: 'u.display_name', email: 'lower(u.email)', createdAt: 'u.created_at' },
  default: ['displayName,asc'],
  tiebreaker: 'u.id',
};

export const organizationUserSort = {
  fields: { createdAt: 'ou.created_at', status: 'ou.status', displayName: 'u.display_name', email: 'lower(u.email)' },
  default: ['createdAt,asc'],
  tiebreaker: 'ou.id',
};

const toUserDto = (row: tables.OrganizationUserRow) => tables.toOrganizationUserDto(row).user;

/** One page of the caller's organization's memberships, shown as users or as organization users. */
async function membersPage<T>(ctx: OperationContext, page: PageRequest, toDto: (row: tables.OrganizationUserRow) => T) {
  const { rows, total } = await fetchPage<tables.OrganizationUserRow>(ctx.em, { columns: tables.organizationUserColumns, from: scope(ctx.actor.organizationId) }, page);
  return { items: rows.map(toDto), total };
}

/** One membership of the caller's organization, by user id or organization-user id; 404 naming `entity` otherwise. */
async function member<T>(ctx: OperationContext, by: 'u.id' | 'ou.id', id: string, entity: string, toDto: (row: tables.OrganizationUserRow) => T) {
  const row = await db.queryOne<tables.OrganizationUserRow>(ctx.em, sql`select ${tables.organizationUserColumns} ${scope(ctx.actor.organizationId)} and ${raw(by)} = ${id}`);
  if (!row) throw new errors.NotFoundError(entity, id);
  return toDto(row);
}

export const listUsers = (ctx: OperationContext, page: PageRequest) => membersPage(ctx, page, toUserDto);
export const getUser = (ctx: OperationContext, id: string) => member(ctx, 'u.id', id, 'User', toUserDto);
export const listOrganizationUsers = (ctx: OperationContext, page: PageRequest) => membersPage(ctx, page, tables.toOrganizationUserDto);
export const getOrganizationUser = (ctx: OperationContext, id: string) => member(ctx, 'ou.id', id, 'OrganizationUser', tables.toOrganizationUserDto);
