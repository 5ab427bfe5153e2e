import { definePlugin, defineRead, defineWrite } from '../../core/public.ts';
import { events } from './events.ts';
import { migrations } from './migrations.ts';
import { Grant, GrantBody, GrantParams, ProjectParams } from './schemas.ts';
import { grant, grantSort, list, revoke } from './service.ts';

const tags = ['Project access'];

/**
 * Project access grants (an extension of v1: the spec says teams can be granted access to
 * projects but shows no endpoint). A grant makes an organization user, or every member of a
 * team, a member of the project; the permission service reads grants on every request.
 */
export default definePlugin({
  name: 'project-access',
  version: '1.0.0',
  description: 'List, grant and revoke project access for organization users and teams (extension of v1)',
  tags: {
    'Project access': 'Grants of a project to organization users and teams (extension of v1).',
  },
  dependsOn: ['projects', 'teams'],
  migrations,
  events,
  register(ctx) {
    ctx.read(
      defineRead({
        name: 'list_project_access',
        description: 'List who has been granted access to a project (extension of v1).',
        path: '/projects/:id/access',
        tags,
        params: ProjectParams,
        response: Grant,
        paged: { sort: grantSort },
        // Not one of the spec's 52 agent tools.
        tool: false,
        run: (c, { id }, page) => list(c, id, page),
      }),
    );
    ctx.write(
      defineWrite({
        method: 'POST',
        operationId: 'grant_project_access',
        description: 'Grant an organization user or a team access to a project (extension of v1). Contributors only.',
        path: '/projects/:id/access',
        tags,
        params: ProjectParams,
        body: GrantBody,
        status: 201,
        errors: [403, 409],
        response: Grant,
        run: (c, { params, body }) => grant(c, params.id, body),
      }),
    );
    ctx.write(
      defineWrite({
        method: 'DELETE',
        operationId: 'revoke_project_access',
        description: 'Revoke a project access grant (extension of v1). Contributors only.',
        path: '/projects/:id/access/:grantId',
        tags,
        params: GrantParams,
        status: 204,
        errors: [403],
        run: (c, { params }) => revoke(c, params.id, params.grantId),
      }),
    );
  },
});
