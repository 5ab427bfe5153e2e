import { definePlugin, defineRead, defineWrite, type OperationContext, schemas } from '../../core/public.ts';
import { events } from './events.ts';
import { migrations } from './migrations.ts';
import { CreateTeamBody, TeamSchema, UpdateTeamBody, UserIdsBody, type TeamDto } from './schemas.ts';
import { TeamService, teamSort } from './service.ts';

const tags = ['Teams'];

/** `POST`/`DELETE /teams/:id/users`: the two membership writes differ only in method, name and work. */
function membersWrite(method: 'POST' | 'DELETE', operationId: string, action: string, run: (c: OperationContext, id: string, userIds: string[]) => Promise<TeamDto>) {
  return defineWrite({
    method,
    operationId,
    description: `${action} (idempotent). Organization admins only.`,
    path: '/teams/:id/users',
    tags,
    params: schemas.IdParams,
    body: UserIdsBody,
    status: 200,
    errors: [403],
    response: TeamSchema,
    run: (c, { params, body }) => run(c, params.id, body.userIds),
  });
}

/** Teams: reusable groups of organization users; project access can be granted to a team at once. */
export default definePlugin({
  name: 'teams',
  version: '1.0.0',
  description: 'Teams (list and get for members; create, update and membership for organization admins)',
  tags: {
    Teams: 'Groups of organization users; a team granted access to a project makes its active members project members. Organization admins write.',
  },
  dependsOn: ['users'],
  migrations,
  events,
  setup: () => new TeamService(),
  register(ctx, service) {
    ctx.read(
      defineRead({
        name: 'list_teams',
        description: 'List the teams of the caller\'s organization with their members.',
        path: '/teams',
        tags,
        response: TeamSchema,
        paged: { sort: teamSort },
        run: (c, _input, page) => service.list(c, page),
      }),
    );
    ctx.read(
      defineRead({
        name: 'get_team',
        description: 'Get one team with its members.',
        path: '/teams/:id',
        tags,
        params: schemas.IdParams,
        response: TeamSchema,
        run: (c, { id }) => service.get(c, id),
      }),
    );
    ctx.write(
      defineWrite({
        method: 'POST',
        operationId: 'create_team',
        description: 'Create a team. Organization admins only.',
        path: '/teams',
        tags,
        body: CreateTeamBody,
        status: 201,
        errors: [403],
        response: TeamSchema,
        run: (c, { body }) => service.create(c, body),
      }),
    );
    ctx.write(
      defineWrite({
        method: 'PUT',
        operationId: 'update_team',
        description: 'Update a team: name, description, active flag and (when `userIds`, or `members` as a team response gives it, is given) the member list. Organization admins only.',
        path: '/teams/:id',
        tags,
        params: schemas.IdParams,
        body: UpdateTeamBody,
        status: 200,
        errors: [403],
        response: TeamSchema,
        run: (c, { params, body }) => service.update(c, params.id, body),
      }),
    );
    ctx.write(membersWrite('POST', 'add_team_users', 'Add users to a team', (c, id, userIds) => service.addUsers(c, id, userIds)));
    ctx.write(membersWrite('DELETE', 'remove_team_users', 'Remove users from a team', (c, id, userIds) => service.removeUsers(c, id, userIds)));
  },
});
