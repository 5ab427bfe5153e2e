import t from 'tap';
import crypto from 'node:crypto';
import { applyBootstrap } from '../../../app/cli/bootstrap.ts';
import { startTestServer, testCast } from '../../support/server.ts';
import { connectMcp, expectToolMatchesRest, callTool } from '../../support/mcp.ts';
import { whileUncommitted } from '../../support/uncommitted.ts';

const server = await startTestServer(t, { plugins: ['users', 'teams'] });
const { org, other, admin, alice, bob, outsider } = await testCast(server);

async function team(body: Record<string, unknown>) {
  const res = await server.post('/api/v1/teams', body, { key: admin.key });
  if (res.status !== 201) throw new Error(`team create failed: ${res.status} ${res.text}`);
  return res.body;
}

t.test('admins create teams with members given as user ids or organization-user ids', async (t) => {
  const res = await server.post('/api/v1/teams', { name: 'Biology', description: 'Wet lab', userIds: [alice.userId, bob.organizationUserId] }, { key: admin.key });
  t.equal(res.status, 201);
  t.match(res.body, { name: 'Biology', description: 'Wet lab', active: true, organizationId: org });
  t.same(res.body.members.map((m: { id: string }) => m.id).sort(), [alice.organizationUserId, bob.organizationUserId].sort());
  t.match(res.body.members[0], { organizationId: org, user: { id: String }, roles: Array, status: 'ACTIVE' });
  const rows = await server.sql<{ event_type: string; category: string; data: { organizationUserIds?: string[] } }>(
    `select event_type, category, data from activity where data->>'teamId' = ? order by event_type`, [res.body.id]);
  t.same(rows.map((r) => [r.event_type, r.category]), [['team.created', 'ADMINISTRATIVE'], ['team.members_added', 'GOVERNANCE']]);
});

t.test('writes are for organization admins only; users must belong to the organization', async (t) => {
  t.equal((await server.post('/api/v1/teams', { name: 'X' }, { key: alice.key })).status, 403);
  const tm = await team({ name: 'Chem' });
  const forbidden = await server.put(`/api/v1/teams/${tm.id}`, { name: 'Y' }, { key: alice.key });
  t.equal(forbidden.status, 403);
  t.equal(forbidden.text, '');
  t.equal((await server.post(`/api/v1/teams/${tm.id}/users`, { userIds: [bob.userId] }, { key: bob.key })).status, 403);
  t.equal((await server.request('DELETE', `/api/v1/teams/${tm.id}/users`, { key: bob.key, body: { userIds: [bob.userId] } })).status, 403);
  const foreign = await server.post(`/api/v1/teams/${tm.id}/users`, { userIds: [outsider.userId] }, { key: admin.key });
  t.equal(foreign.status, 400);
  t.same(foreign.body.errors, [{ field: 'userIds', message: `${outsider.userId} is not a user of this organization` }]);
  t.equal((await server.put(`/api/v1/teams/${tm.id}`, { name: 'Y' }, { key: outsider.key })).status, 404, 'another organization');
  const blank = await server.post('/api/v1/teams', { name: ' ' }, { key: admin.key });
  t.same(blank.body.errors, [{ field: 'name', message: 'must not be blank' }]);
});

t.test('add and remove users (idempotent), update replaces the member list', async (t) => {
  const tm = await team({ name: 'Ops' });
  const added = await server.post(`/api/v1/teams/${tm.id}/users`, { userIds: [alice.userId, bob.userId] }, { key: admin.key });
  t.equal(added.status, 200);
  t.equal(added.body.members.length, 2);
  const again = await server.post(`/api/v1/teams/${tm.id}/users`, { userIds: [alice.userId] }, { key: admin.key });
  t.equal(again.body.members.length, 2);
  const removed = await server.request('DELETE', `/api/v1/teams/${tm.id}/users`, { key: admin.key, body: { userIds: [bob.userId] } });
  t.equal(removed.status, 200);
  t.same(removed.body.members.map((m: { id: string }) => m.id), [alice.organizationUserId]);
  const replaced = await server.put(`/api/v1/teams/${tm.id}`, { active: false, userIds: [bob.organizationUserId] }, { key: admin.key });
  t.match(replaced.body, { active: false, name: 'Ops' });
  t.same(replaced.body.members.map((m: { id: string }) => m.id), [bob.organizationUserId]);
  const stale = await server.put(`/api/v1/teams/${tm.id}`, { name: 'Z', version: tm.version }, { key: admin.key });
  t.equal(stale.status, 409);
});

t.test('the member list may be written back as a team response gives it (members), not only as userIds', async (t) => {
  // Spec: PUT takes "name, description, active flag, member list". A client that reads a team,
  // edits it and writes it back sends `members`: dropping it silently would leave the list as it was.
  const created = await server.post('/api/v1/teams', { name: 'Roundtrip', members: [alice.userId, bob.organizationUserId] }, { key: admin.key });
  t.equal(created.status, 201);
  t.same(created.body.members.map((m: { id: string }) => m.id).sort(), [alice.organizationUserId, bob.organizationUserId].sort(), 'members given as ids');
  const edited = { ...created.body, name: 'Roundtrip 2', members: created.body.members.filter((m: { id: string }) => m.id !== bob.organizationUserId) };
  const put = await server.put(`/api/v1/teams/${created.body.id}`, edited, { key: admin.key });
  t.equal(put.status, 200, put.text);
  t.equal(put.body.name, 'Roundtrip 2');
  t.same(put.body.members.map((m: { id: string }) => m.id), [alice.organizationUserId], 'the member list as written back');
  const both = await server.put(`/api/v1/teams/${created.body.id}`, { members: [bob.userId], userIds: [bob.userId] }, { key: admin.key });
  t.equal(both.status, 400);
  t.same(both.body.errors, [{ field: 'members', message: 'give the member list as userIds or as members, not both' }]);
  const empty = await server.put(`/api/v1/teams/${created.body.id}`, { members: [{}] }, { key: admin.key });
  t.same([empty.status, empty.body.errors], [400, [{ field: 'members.0', message: 'must be an id or an object with id or userId' }]]);
  const foreign = await server.put(`/api/v1/teams/${created.body.id}`, { members: [outsider.userId] }, { key: admin.key });
  t.same([foreign.status, foreign.body.errors], [400, [{ field: 'members', message: `${outsider.userId} is not a user of this organization` }]], 'the same checks as userIds, naming the field the request used');
  const foreignIds = await server.put(`/api/v1/teams/${created.body.id}`, { userIds: [outsider.userId] }, { key: admin.key });
  t.same(foreignIds.body.errors, [{ field: 'userIds', message: `${outsider.userId} is not a user of this organization` }]);
  const foreignCreate = await server.post('/api/v1/teams', { name: 'Foreign', members: [{ id: outsider.userId }] }, { key: admin.key });
  t.same([foreignCreate.status, foreignCreate.body.errors], [400, [{ field: 'members', message: `${outsider.userId} is not a user of this organization` }]]);
});

t.test('members read teams of their organization; tools equal REST', async (t) => {
  const tm = await team({ name: 'Readers', userIds: [alice.userId] });
  const list = await server.get('/api/v1/teams?sort=name,asc', { key: bob.key });
  t.equal(list.status, 200);
  t.ok(list.body.content.some((x: { id: string }) => x.id === tm.id));
  t.equal((await server.get(`/api/v1/teams/${tm.id}`, { key: outsider.key })).status, 404);
  const client = await connectMcp(server.url, { key: bob.key, teardown: (fn) => t.teardown(fn) });
  await expectToolMatchesRest(t, server, client, bob.key, 'list_teams', { page: 0, size: 2 }, '/teams?page=0&size=2');
  await expectToolMatchesRest(t, server, client, bob.key, 'get_team', { id: tm.id }, `/teams/${tm.id}`);
  const outsiderClient = await connectMcp(server.url, { key: outsider.key, teardown: (fn) => t.teardown(fn) });
  const hidden = await callTool(outsiderClient, 'get_team', { id: tm.id });
  t.equal(hidden.isError, true);
});

t.test('INACTIVE users cannot join a team (create, add, replace); removing them still works', async (t) => {
  const gone = await server.member(org, { status: 'INACTIVE' });
  const message = (id: string) => [{ field: 'userIds', message: `${id} is an INACTIVE user of this organization` }];
  const created = await server.post('/api/v1/teams', { name: 'With inactive', userIds: [alice.userId, gone.userId] }, { key: admin.key });
  t.equal(created.status, 400);
  t.same(created.body.errors, message(gone.userId));
  t.equal((await server.sql(`select 1 from team where name = 'With inactive'`)).length, 0, 'nothing created');
  const tm = await team({ name: 'Actives' });
  const added = await server.post(`/api/v1/teams/${tm.id}/users`, { userIds: [gone.organizationUserId] }, { key: admin.key });
  t.equal(added.status, 400);
  t.same(added.body.errors, message(gone.organizationUserId));
  const replaced = await server.put(`/api/v1/teams/${tm.id}`, { userIds: [gone.userId] }, { key: admin.key });
  t.equal(replaced.status, 400);
  t.same(replaced.body.errors, message(gone.userId));
  t.same((await server.get(`/api/v1/teams/${tm.id}`, { key: admin.key })).body.members, []);
  // A member deactivated later stays listable in PUT and can be removed.
  const later = await server.member(org);
  t.equal((await server.post(`/api/v1/teams/${tm.id}/users`, { userIds: [later.userId] }, { key: admin.key })).status, 200);
  await server.sql(`update organization_user set status = 'INACTIVE' where id = ?`, [later.organizationUserId]);
  t.equal((await server.put(`/api/v1/teams/${tm.id}`, { userIds: [later.userId, bob.userId] }, { key: admin.key })).status, 200);
  const removed = await server.request('DELETE', `/api/v1/teams/${tm.id}/users`, { key: admin.key, body: { userIds: [later.userId] } });
  t.equal(removed.status, 200);
  t.same(removed.body.members.map((m: { id: string }) => m.id), [bob.organizationUserId]);
});

t.test('writes on another organization\'s team are 404 for every key of that organization, as reads are', async (t) => {
  const tm = await team({ name: 'Hidden' });
  const outsiderUser = await server.member(other);
  for (const key of [outsider.key, outsiderUser.key]) {
    const writes = [
      await server.put(`/api/v1/teams/${tm.id}`, { name: 'Y' }, { key }),
      await server.post(`/api/v1/teams/${tm.id}/users`, { userIds: [outsiderUser.userId] }, { key }),
      await server.request('DELETE', `/api/v1/teams/${tm.id}/users`, { key, body: { userIds: [outsiderUser.userId] } }),
    ];
    t.same(writes.map((r) => r.status), [404, 404, 404]);
    t.match(writes[0].body, { statusCode: 404, error: 'Not Found', path: `/api/v1/teams/${tm.id}` });
  }
  t.equal((await server.put(`/api/v1/teams/${crypto.randomUUID()}`, { name: 'Y' }, { key: alice.key })).status, 404, 'unknown team, non-admin');
  t.equal((await server.put(`/api/v1/teams/${tm.id}`, { name: 'Y' }, { key: alice.key })).status, 403, 'own organization, non-admin');
});

t.test('the bootstrap file refuses an INACTIVE team member too, changing nothing', async (t) => {
  const gone = await server.member(org, { status: 'INACTIVE' });
  const file = {
    users: [{ ref: 'later', email: `later-${crypto.randomUUID()}@example.test`, memberships: [{ organization: org, status: 'INACTIVE' }] }],
    teams: [{ ref: 't', organization: org, name: 'Boot team', members: ['later'] }],
  };
  await t.rejects(applyBootstrap(server.orm.em.fork(), file, server.kernel), { message: 'teams "t": member "later" is INACTIVE in this organization' });
  await t.rejects(applyBootstrap(server.orm.em.fork(), { teams: [{ ref: 'u', organization: org, name: 'Boot team', members: [alice.userId, gone.userId] }] }, server.kernel),
    { message: `teams "u": member "${gone.userId}" is INACTIVE in this organization` });
  t.equal((await server.sql(`select 1 from team where name = 'Boot team'`)).length, 0);
  const ok = await applyBootstrap(server.orm.em.fork(), { teams: [{ ref: 'v', organization: org, name: 'Boot team', members: [alice.userId] }] }, server.kernel);
  t.ok((ok.teams as Record<string, { id: string }>).v.id);
});

// Races: truly concurrent requests on one team end as one serial order of them would, and the
// activity feed records exactly the changes that happened.
const TRIES = 5;
const carol = await server.member(org);
const ids = (members: { id: string }[]) => members.map((m) => m.id).sort();
const membersOf = async (teamId: string) =>
  (await server.sql<{ id: string }>('select organization_user_id as id from team_member where team_id = ? order by 1', [teamId])).map((r) => r.id);
/** The team's member entries, each as `event [ids]`, sorted (their order in time is not stored finely enough). */
const memberEntries = async (teamId: string) =>
  (await server.sql<{ event_type: string; data: { organizationUserIds: string[] } }>(
    `select event_type, data from activity where data->>'teamId' = ? and event_type like 'team.members_%'`, [teamId]))
    .map((r) => `${r.event_type} ${[...r.data.organizationUserIds].sort().join(',')}`).sort();

t.test('concurrent PUTs replacing the member list: the members and the feed are those of one of them', async (t) => {
  const [a, b, c] = [alice.organizationUserId, bob.organizationUserId, carol.organizationUserId];
  for (let i = 0; i < TRIES; i++) {
    const tm = await team({ name: `Race ${i}`, userIds: [c] });
    const answers = await Promise.all([a, b].map((u) => server.put(`/api/v1/teams/${tm.id}`, { userIds: [u] }, { key: admin.key })));
    t.same(answers.map((r) => r.status), [200, 200], 'both answer 200');
    const members = await membersOf(tm.id);
    t.ok(members.length === 1 && [a, b].includes(members[0]), 'exactly [alice] or exactly [bob]', { found: members });
    const [last, first] = members[0] === a ? [a, b] : [b, a];
    // Serial: the first replaces carol, the last replaces the first.
    t.same(await memberEntries(tm.id), [`team.members_added ${c}`, `team.members_added ${first}`, `team.members_added ${last}`,
      `team.members_removed ${c}`, `team.members_removed ${first}`].sort(), 'one entry per change that happened');
  }
});

t.test("the members are part of the team: a change moves its version and updatedAt (a stale update is 409)", async (t) => {
  const tm = await team({ name: 'Versioned', userIds: [alice.userId] });
  t.equal(tm.version, 1, 'a new team with its first members is version 1');
  const added = await server.post(`/api/v1/teams/${tm.id}/users`, { userIds: [bob.userId] }, { key: admin.key });
  t.equal(added.body.version, 2, 'adding a member moves the version');
  t.ok(added.body.updatedAt > tm.updatedAt, 'and updatedAt');
  const same = await server.post(`/api/v1/teams/${tm.id}/users`, { userIds: [bob.userId] }, { key: admin.key });
  t.equal(same.body.version, 2, 'adding a member again changes nothing');
  const stale = await server.put(`/api/v1/teams/${tm.id}`, { userIds: [alice.userId], version: tm.version }, { key: admin.key });
  t.equal(stale.status, 409, 'a member list based on the old version is refused');
  t.same(ids((await server.get(`/api/v1/teams/${tm.id}`, { key: admin.key })).body.members).sort(), [alice.organizationUserId, bob.organizationUserId].sort());
  const upper = await server.request('DELETE', `/api/v1/teams/${tm.id}/users`, { key: admin.key, body: { userIds: [bob.userId.toUpperCase()] } });
  t.equal(upper.status, 200, `an upper-case UUID names the same user: ${upper.text}`);
  t.same(ids(upper.body.members), [alice.organizationUserId]);
  t.equal(upper.body.version, 3);
});

t.test('concurrent PUTs of the member list under one If-Match: one wins, the other is 412', async (t) => {
  const [a, b, c] = [alice.organizationUserId, bob.organizationUserId, carol.organizationUserId];
  for (let i = 0; i < TRIES; i++) {
    const tm = await team({ name: `If-Match ${i}`, userIds: [c] });
    const etag = (await server.get(`/api/v1/teams/${tm.id}`, { key: admin.key })).headers.get('etag')!;
    const answers = await Promise.all([a, b].map((u) => server.put(`/api/v1/teams/${tm.id}`, { userIds: [c, u] }, { key: admin.key, headers: { 'if-match': etag } })));
    t.same(answers.map((r) => r.status).sort(), [200, 412], 'exactly one applies');
    const winner = answers.find((r) => r.status === 200)!;
    t.same(ids(winner.body.members).sort(), (await membersOf(tm.id)).sort(), 'the members are the winner\'s list, not a union');
    t.equal((await membersOf(tm.id)).length, 2);
  }
});

t.test('concurrent adds, then removes, of the same user: idempotent (200 each), one entry per change', async (t) => {
  for (let i = 0; i < TRIES; i++) {
    const tm = await team({ name: `Idempotent ${i}` });
    const body = { userIds: [alice.userId] };
    const adds = await Promise.all([1, 2, 3, 4].map(() => server.post(`/api/v1/teams/${tm.id}/users`, body, { key: admin.key })));
    t.same(adds.map((r) => r.status), [200, 200, 200, 200], `every add answers 200 ${adds.filter((r) => r.status !== 200).map((r) => r.text)}`);
    t.same(adds.map((r) => ids(r.body?.members ?? [])), Array(4).fill([alice.organizationUserId]), 'each answer shows the member');
    const removes = await Promise.all([1, 2, 3, 4].map(() => server.request('DELETE', `/api/v1/teams/${tm.id}/users`, { key: admin.key, body })));
    t.same(removes.map((r) => r.status), [200, 200, 200, 200], `every remove answers 200 ${removes.filter((r) => r.status !== 200).map((r) => r.text)}`);
    t.same(await membersOf(tm.id), []);
    t.same(await memberEntries(tm.id), [`team.members_added ${alice.organizationUserId}`, `team.members_removed ${alice.organizationUserId}`]);
  }
});

t.test('a user deactivated while being added joins no team: the add waits for the deactivation and refuses', async (t) => {
  const tm = await team({ name: 'Deactivation race' });
  const later = await server.member(org);
  const added = await whileUncommitted(server, `update organization_user set status = 'INACTIVE' where id = ?`, [later.organizationUserId],
    () => server.post(`/api/v1/teams/${tm.id}/users`, { userIds: [later.userId] }, { key: admin.key }));
  t.equal(added.status, 400, 'refused');
  t.same(added.body.errors, [{ field: 'userIds', message: `${later.userId} is an INACTIVE user of this organization` }]);
  t.same(await membersOf(tm.id), []);
  t.same(await memberEntries(tm.id), []);
});
