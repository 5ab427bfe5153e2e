import t from 'tap';
import { startTestServer, type Member } from '../../support/server.ts';
import { whileUncommitted } from '../../support/uncommitted.ts';

const server = await startTestServer(t, { plugins: ['users', 'teams', 'projects', 'project-access'] });
const org = await server.organization();
const other = await server.organization();
const admin = await server.admin(org);
const alice = await server.member(org);
const bob = await server.member(org);
const carol = await server.member(org);
const outsider = await server.admin(other);

async function project(owner: Member, visibility: string) {
  const res = await server.post('/api/v1/projects', { code: 'P', name: 'P', description: 'd', visibility }, { key: owner.key });
  return res.body as { id: string };
}
const view = async (m: Member, id: string) => (await server.get(`/api/v1/projects/${id}`, { key: m.key })).status;
const edit = async (m: Member, id: string) => (await server.put(`/api/v1/projects/${id}`, { name: 'n' }, { key: m.key })).status;

t.test('granting a user makes them a member from the next request on; revoking takes it back', async (t) => {
  const p = await project(alice, 'PRIVATE');
  t.equal(await view(bob, p.id), 404);
  const granted = await server.post(`/api/v1/projects/${p.id}/access`, { userId: bob.userId }, { key: alice.key });
  t.equal(granted.status, 201);
  t.match(granted.body, { projectId: p.id, organizationUserId: bob.organizationUserId, teamId: null });
  t.same([await view(bob, p.id), await edit(bob, p.id)], [200, 200]);
  const dup = await server.post(`/api/v1/projects/${p.id}/access`, { organizationUserId: bob.organizationUserId }, { key: alice.key });
  t.equal(dup.status, 409);
  const list = await server.get(`/api/v1/projects/${p.id}/access`, { key: bob.key });
  t.equal(list.status, 200);
  t.equal(list.body.totalElements, 2, 'the creator and bob');
  t.equal((await server.delete(`/api/v1/projects/${p.id}/access/${granted.body.id}`, { key: alice.key })).status, 204);
  t.equal(await view(bob, p.id), 404);
  const rows = await server.sql<{ event_type: string; category: string }>(`select event_type, category from activity where project_id = ? and event_type like 'project.access%' order by date`, [p.id]);
  t.same(rows, [{ event_type: 'project.access_granted', category: 'GOVERNANCE' }, { event_type: 'project.access_revoked', category: 'GOVERNANCE' }]);
});

t.test('a team grant reaches every active member of an active team', async (t) => {
  const p = await project(alice, 'PROTECTED');
  const team = await server.post('/api/v1/teams', { name: 'Lab', userIds: [carol.userId] }, { key: admin.key });
  t.equal(await edit(carol, p.id), 403, 'PROTECTED: carol may view only');
  t.equal((await server.post(`/api/v1/projects/${p.id}/access`, { teamId: team.body.id }, { key: alice.key })).status, 201);
  t.equal(await edit(carol, p.id), 200, 'contributes through the team');
  await server.put(`/api/v1/teams/${team.body.id}`, { active: false }, { key: admin.key });
  t.equal(await edit(carol, p.id), 403, 'an inactive team grants nothing');
});

t.test('who may manage access', async (t) => {
  const p = await project(alice, 'PROTECTED');
  t.equal((await server.get(`/api/v1/projects/${p.id}/access`, { key: bob.key })).status, 200, 'viewers list');
  t.equal((await server.post(`/api/v1/projects/${p.id}/access`, { userId: bob.userId }, { key: bob.key })).status, 403, 'viewers do not grant');
  t.equal((await server.post(`/api/v1/projects/${p.id}/access`, { userId: bob.userId }, { key: outsider.key })).status, 404);
  t.equal((await server.post(`/api/v1/projects/${p.id}/access`, { userId: outsider.userId }, { key: alice.key })).status, 400, 'users of another organization');
  const both = await server.post(`/api/v1/projects/${p.id}/access`, { userId: bob.userId, teamId: bob.userId }, { key: alice.key });
  t.equal(both.status, 400);
  t.same(both.body.errors, [{ field: 'teamId', message: 'cannot be given together with userId (give exactly one)' }], 'the validation envelope names the extra field');
  const none = await server.post(`/api/v1/projects/${p.id}/access`, {}, { key: alice.key });
  t.equal(none.status, 400);
  t.same(none.body.errors, [{ field: 'body', message: 'must give one of organizationUserId, userId or teamId' }]);
  t.equal((await server.post(`/api/v1/projects/${p.id}/access`, { userId: bob.userId }, { key: admin.key })).status, 201, 'admins manage any project');
});

t.test('a grant to an INACTIVE organization user is a 400 naming the field', async (t) => {
  const p = await project(alice, 'PRIVATE');
  const gone = await server.member(org, { status: 'INACTIVE' });
  for (const body of [{ userId: gone.userId }, { organizationUserId: gone.organizationUserId }]) {
    const res = await server.post(`/api/v1/projects/${p.id}/access`, body, { key: alice.key });
    t.equal(res.status, 400);
    t.same(res.body.errors, [{ field: Object.keys(body)[0], message: 'is an INACTIVE user of this organization' }]);
  }
  const invited = await server.member(org, { status: 'INVITED' });
  t.equal((await server.post(`/api/v1/projects/${p.id}/access`, { userId: invited.userId }, { key: alice.key })).status, 201, 'INVITED users may be granted ahead');
  t.equal((await server.sql(`select 1 from project_member where organization_user_id = ?`, [gone.organizationUserId])).length, 0);
});

// Races: truly concurrent requests end as one serial order of them would, with one activity entry per change.
const TRIES = 5;
const grantsOf = async (projectId: string) => server.sql<{ id: string }>('select id from project_member where project_id = ?', [projectId]);
const entries = async (projectId: string, eventType: string) =>
  (await server.sql('select 1 from activity where project_id = ? and event_type = ?', [projectId, eventType])).length;

t.test('a grant sent while its project is deleted comes first and goes with it, or is a 404: no grant outlives its project', async (t) => {
  for (let i = 0; i < TRIES; i++) {
    const p = await project(alice, 'PRIVATE');
    const [deleted, granted] = await Promise.all([
      server.delete(`/api/v1/projects/${p.id}`, { key: alice.key }),
      server.post(`/api/v1/projects/${p.id}/access`, { userId: bob.userId }, { key: alice.key }),
    ]);
    t.equal(deleted.status, 204);
    t.ok([201, 404].includes(granted.status), `grant: 201 or 404, got ${granted.status}`);
    t.same(await grantsOf(p.id), [], 'no grant left');
    t.equal(await entries(p.id, 'project.access_granted'), granted.status === 201 ? 1 : 0, 'an entry only for a grant that was made');
  }
});

t.test('concurrent grants of one user, then concurrent revokes of the grant: one succeeds, the others conflict or find nothing', async (t) => {
  for (let i = 0; i < TRIES; i++) {
    const p = await project(alice, 'PRIVATE');
    const grants = await Promise.all([1, 2, 3].map(() => server.post(`/api/v1/projects/${p.id}/access`, { userId: bob.userId }, { key: alice.key })));
    t.same(grants.map((r) => r.status).sort(), [201, 409, 409]);
    const grant = grants.find((r) => r.status === 201)!.body;
    const revokes = await Promise.all([1, 2, 3].map(() => server.delete(`/api/v1/projects/${p.id}/access/${grant.id}`, { key: alice.key })));
    t.same(revokes.map((r) => r.status).sort(), [204, 404, 404]);
    t.equal((await grantsOf(p.id)).length, 1, 'only the creator\'s grant is left');
    t.same([await entries(p.id, 'project.access_granted'), await entries(p.id, 'project.access_revoked')], [1, 1]);
  }
});

t.test('a user deactivated while being granted access is refused: the grant waits for the deactivation', async (t) => {
  const p = await project(alice, 'PRIVATE');
  const later = await server.member(org);
  const granted = await whileUncommitted(server, `update organization_user set status = 'INACTIVE' where id = ?`, [later.organizationUserId],
    () => server.post(`/api/v1/projects/${p.id}/access`, { userId: later.userId }, { key: alice.key }));
  t.equal(granted.status, 400, 'refused');
  t.same(granted.body.errors, [{ field: 'userId', message: 'is an INACTIVE user of this organization' }]);
  t.equal((await grantsOf(p.id)).length, 1, 'only the creator\'s grant');
  t.equal(await entries(p.id, 'project.access_granted'), 0);
});
