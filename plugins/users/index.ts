import { definePlugin, defineRead, schemas, tables } from '../../core/public.ts';
import { events } from './events.ts';
import { migrations } from './migrations.ts';
import { UserSchema } from './schemas.ts';
import { getOrganizationUser, getUser, listOrganizationUsers, listUsers, organizationUserSort, userSort } from './service.ts';

/** Read-only users and organization users of the caller's organization. */
export default definePlugin({
  name: 'users',
  version: '1.0.0',
  description: 'Read-only users and organization users',
  tags: {
    Users: "People with an account in the caller's organization (read-only).",
    'Organization users': "Memberships of users in the caller's organization: roles and status (read-only).",
  },
  migrations,
  events,
  register(ctx) {
    // Users and organization users are two views of the same memberships: one list and one get each.
    ctx.read(
      defineRead({
        name: 'list_users',
        description: 'List the users of the caller\'s organization.',
        path: '/users',
        tags: ['Users'],
        response: UserSchema,
        paged: { sort: userSort },
        run: (c, _input, page) => listUsers(c, page),
      }),
    );
    ctx.read(
      defineRead({
        name: 'get_user',
        description: 'Get one user of the caller\'s organization by id.',
        path: '/users/:id',
        tags: ['Users'],
        params: schemas.IdParams,
        response: UserSchema,
        run: (c, { id }) => getUser(c, id),
      }),
    );
    ctx.read(
      defineRead({
        name: 'list_organization_users',
        description: 'List the members of the caller\'s organization, with roles and status.',
        path: '/organization-users',
        tags: ['Organization users'],
        response: tables.OrganizationUserSchema,
        paged: { sort: organizationUserSort },
        run: (c, _input, page) => listOrganizationUsers(c, page),
      }),
    );
    ctx.read(
      defineRead({
        name: 'get_organization_user',
        description: 'Get one organization user (membership of a user in the caller\'s organization) by id.',
        path: '/organization-users/:id',
        tags: ['Organization users'],
        params: schemas.IdParams,
        response: tables.OrganizationUserSchema,
        run: (c, { id }) => getOrganizationUser(c, id),
      }),
    );
  },
});
