import { definePlugin, defineRead, fetchPage, NotFoundError, queryOne, sql, IdParams } from '../../core/public.ts';
import {
  OrganizationUserSchema,
  UserSchema,
  organizationUserColumns,
  toOrganizationUserDto,
  toUserDto,
  type OrganizationUserRow,
} from '../../core/public.ts';

// Users are visible through their membership in the caller's organization only.
const scope = (organizationId: string) =>
  sql`from organization_user ou join app_user u on u.id = ou.user_id where ou.organization_id = ${organizationId}`;

const userSort = {
  fields: { displayName: 'u.display_name', email: 'lower(u.email)', createdAt: 'u.created_at' },
  default: ['displayName,asc'],
  tiebreaker: 'u.id',
};

const organizationUserSort = {
  fields: { createdAt: 'ou.created_at', status: 'ou.status', displayName: 'u.display_name', email: 'lower(u.email)' },
  default: ['createdAt,asc'],
  tiebreaker: 'ou.id',
};

const listUsers = defineRead({
  name: 'list_users',
  description: 'List the users of the caller\'s organization.',
  path: '/users',
  tags: ['Users'],
  response: UserSchema,
  paged: { sort: userSort },
  async run(ctx, _input, page) {
    const { rows, total } = await fetchPage<OrganizationUserRow>(ctx.em, { columns: organizationUserColumns, from: scope(ctx.actor.organizationId) }, page);
    return { items: rows.map(toUserDto), total };
  },
});

const getUser = defineRead({
  name: 'get_user',
  description: 'Get one user of the caller\'s organization by id.',
  path: '/users/:id',
  tags: ['Users'],
  params: IdParams,
  response: UserSchema,
  async run(ctx, { id }) {
    const row = await queryOne<OrganizationUserRow>(ctx.em, sql`select ${organizationUserColumns} ${scope(ctx.actor.organizationId)} and u.id = ${id}`);
    if (!row) throw new NotFoundError('User', id);
    return toUserDto(row);
  },
});

const listOrganizationUsers = defineRead({
  name: 'list_organization_users',
  description: 'List the members of the caller\'s organization, with roles and status.',
  path: '/organization-users',
  tags: ['Organization users'],
  response: OrganizationUserSchema,
  paged: { sort: organizationUserSort },
  async run(ctx, _input, page) {
    const { rows, total } = await fetchPage<OrganizationUserRow>(ctx.em, { columns: organizationUserColumns, from: scope(ctx.actor.organizationId) }, page);
    return { items: rows.map(toOrganizationUserDto), total };
  },
});

const getOrganizationUser = defineRead({
  name: 'get_organization_user',
  description: 'Get one organization user (membership of a user in the caller\'s organization) by id.',
  path: '/organization-users/:id',
  tags: ['Organization users'],
  params: IdParams,
  response: OrganizationUserSchema,
  async run(ctx, { id }) {
    const row = await queryOne<OrganizationUserRow>(ctx.em, sql`select ${organizationUserColumns} ${scope(ctx.actor.organizationId)} and ou.id = ${id}`);
    if (!row) throw new NotFoundError('OrganizationUser', id);
    return toOrganizationUserDto(row);
  },
});

/** Read-only users and organization users of the caller's organization. */
export default definePlugin({
  name: 'users',
  version: '1.0.0',
  description: 'Read-only users and organization users',
  tags: {
    Users: "People with an account in the caller's organization (read-only).",
    'Organization users': "Memberships of users in the caller's organization: roles and status (read-only).",
  },
  register(ctx) {
    for (const read of [listUsers, getUser, listOrganizationUsers, getOrganizationUser]) ctx.read(read);
  },
});

