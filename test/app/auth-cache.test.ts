// Authentication without a database round trip (issue "Scale", point 3): keys are cached per
// instance, and a revoked key, an expired key, a deactivated membership and a removed admin
// role are still refused on the very next request — on every instance sharing the database,
// and also while the cache's listener connection is down (the cache is then bypassed). A key's
// cached actor carries its user's active teams: joining or leaving a team, and a team switched
// off or on, apply on the next request too — also to what the activity feeds show, whose
// conditions are kept per cached actor (plugins/activity).
import t from 'tap';
import { startTestServer } from '../support/server.ts';

const plugins = ['users', 'teams', 'projects', 'project-access', 'activity'];
const a = await startTestServer(t, { plugins });
// A second instance on the same database, as behind a load balancer.
const b = await startTestServer(t, { plugins, databaseUrl: a.databaseUrl });
const org = await a.organization('Cached');

/** Warms both instances' caches with the key, then checks both answer `status`. */
async function bothAnswer(key: string, status: number, path = '/api/v1/users') {
  return [(await a.get(path, { key })).status, (await b.get(path, { key })).status].every((s) => s === status);
}

/** On each instance: whether the key's organization feed holds the project's entries, and its total. */
async function feedShows(key: string, projectId: string) {
  return Promise.all([a, b].map(async (server) => {
    const { body } = await server.get('/api/v1/activity?size=200', { key });
    return { shown: body.content.some((e: { projectId: string }) => e.projectId === projectId), total: body.totalElements };
  }));
}

t.test('a key is served from the cache and counted as used once', async (t) => {
  const m = await a.member(org);
  t.ok(await bothAnswer(m.key, 200));
  const statements: string[] = [];
  const { statementObserver } = await import('../../core/db/sql.ts');
  statementObserver.observe = (q) => statements.push(q.text);
  t.equal((await a.get('/api/v1/users/' + m.userId, { key: m.key })).status, 200);
  statementObserver.observe = undefined;
  t.notOk(statements.some((s) => /from api_key/.test(s)), 'a cached key costs no key lookup');
});

t.test('revocation in the database is refused by every instance on the next request', async (t) => {
  const m = await a.member(org);
  t.ok(await bothAnswer(m.key, 200), 'both instances cached the key');
  await a.sql('update api_key set revoked_at = now() where id = ?', [m.keyId]);
  t.equal((await b.get('/api/v1/users', { key: m.key })).status, 401, 'instance b refuses at once');
  t.equal((await a.get('/api/v1/users', { key: m.key })).status, 401, 'instance a refuses at once');
});

t.test('an expired key and a deactivated membership are refused on the next request', async (t) => {
  const m = await a.member(org);
  t.ok(await bothAnswer(m.key, 200));
  await a.sql(`update api_key set expires_at = now() - interval '1 second' where id = ?`, [m.keyId]);
  t.ok(await bothAnswer(m.key, 401), 'expired');
  const n = await a.member(org);
  t.ok(await bothAnswer(n.key, 200));
  await a.sql(`update organization_user set status = 'INACTIVE' where id = ?`, [n.organizationUserId]);
  t.ok(await bothAnswer(n.key, 401), 'deactivated');
});

t.test('a change to one user drops every key of that user and no other user\'s', async (t) => {
  const n = await a.member(org);
  const second = await a.key(n);
  const m = await a.member(org);
  for (const key of [n.key, second.key, m.key]) t.ok(await bothAnswer(key, 200), 'cached on both instances');
  await a.sql(`update organization_user set status = 'INACTIVE' where id = ?`, [n.organizationUserId]);
  t.ok(await bothAnswer(n.key, 401), 'the user\'s first key is refused');
  t.ok(await bothAnswer(second.key, 401), 'and its second');
  const statements: string[] = [];
  const { statementObserver } = await import('../../core/db/sql.ts');
  statementObserver.observe = (q) => statements.push(q.text);
  t.ok(await bothAnswer(m.key, 200), 'another user\'s key still works');
  statementObserver.observe = undefined;
  t.notOk(statements.some((s) => /from api_key/.test(s)), 'and is still served from the cache');
});

t.test('a cached key is refused once its expiry passes, with nothing changed in the database', async (t) => {
  // Spec, Authentication: an expired key is a 401; README: a revoked or expired key is "refused on
  // the very next request on every instance". Nothing is updated here, so no NOTIFY clears the
  // cache: the cached entry itself must stop serving at its expiry.
  const m = await a.member(org);
  // Long enough for the key's creation and two requests on a slow machine, before it expires.
  const expiresAt = Date.now() + 5_000;
  const short = await a.key(m, { expiresAt: new Date(expiresAt).toISOString() });
  t.ok(await bothAnswer(short.key, 200), 'both instances cached the key');
  await new Promise((r) => setTimeout(r, expiresAt - Date.now() + 200));
  t.ok(await bothAnswer(short.key, 401), 'expired: refused by both instances');
  t.ok(await bothAnswer(m.key, 200), 'the member\'s other key still works');
});

t.test('a removed admin role applies on the next request on every instance', async (t) => {
  const boss = await a.admin(org);
  const alice = await a.member(org);
  const res = await a.post('/api/v1/projects', { code: 'X', name: 'Hidden', description: 'd', visibility: 'PRIVATE' }, { key: alice.key });
  const path = `/api/v1/projects/${res.body.id}`;
  t.ok(await bothAnswer(boss.key, 200, path), 'the admin sees the PRIVATE project');
  t.same((await feedShows(boss.key, res.body.id)).map((f) => f.shown), [true, true], 'and its activity');
  await a.setRoles(boss.organizationUserId, ['ORGANIZATION_USER']);
  t.ok(await bothAnswer(boss.key, 404, path), 'no longer');
  t.same((await feedShows(boss.key, res.body.id)).map((f) => f.shown), [false, false], 'nor its activity');
});

t.test('team membership and a team\'s active flag apply on the next request on every instance', async (t) => {
  const boss = await a.admin(org);
  const alice = await a.member(org);
  const bob = await a.member(org);
  const res = await a.post('/api/v1/projects', { code: 'T', name: 'Team only', description: 'd', visibility: 'PRIVATE' }, { key: alice.key });
  const path = `/api/v1/projects/${res.body.id}`;
  const team = (await a.post('/api/v1/teams', { name: 'Cache team', userIds: [] }, { key: boss.key })).body;
  t.equal((await a.post(`${path}/access`, { teamId: team.id }, { key: alice.key })).status, 201);
  t.ok(await bothAnswer(bob.key, 404, path), 'not in the team: the PRIVATE project is hidden (both caches hold the key)');
  const listed = async (server: typeof a) => (await server.get('/api/v1/projects?size=1', { key: bob.key })).body.totalElements;
  const before = [await listed(a), await listed(b)];
  const feedBefore = await feedShows(bob.key, res.body.id);
  t.same(feedBefore.map((f) => f.shown), [false, false], 'nor its activity');

  t.equal((await a.post(`/api/v1/teams/${team.id}/users`, { userIds: [bob.userId] }, { key: boss.key })).status, 200);
  t.ok(await bothAnswer(bob.key, 200, path), 'joined: visible at once on both instances');
  t.same([await listed(a), await listed(b)], before.map((n) => n + 1), 'and counted in the list total');
  const feedJoined = await feedShows(bob.key, res.body.id);
  t.same(feedJoined.map((f) => f.shown), [true, true], 'its activity in the feed on both instances');
  t.ok(feedJoined.every((f, i) => f.total > feedBefore[i].total), 'and in the feed total');
  t.equal((await b.put(path, { name: 'Through the team' }, { key: bob.key })).status, 200, 'and contributable');

  t.equal((await a.put(`/api/v1/teams/${team.id}`, { active: false }, { key: boss.key })).status, 200);
  t.ok(await bothAnswer(bob.key, 404, path), 'team switched off: hidden again');
  t.same([await listed(a), await listed(b)], before, 'and not counted');
  t.equal((await a.put(`/api/v1/teams/${team.id}`, { active: true }, { key: boss.key })).status, 200);
  t.ok(await bothAnswer(bob.key, 200, path), 'switched on: visible again');

  t.equal((await a.request('DELETE', `/api/v1/teams/${team.id}/users`, { key: boss.key, body: { userIds: [bob.userId] } })).status, 200);
  t.ok(await bothAnswer(bob.key, 404, path), 'left the team: hidden');
  t.same([await listed(a), await listed(b)], before);
  t.same((await feedShows(bob.key, res.body.id)).map((f) => f.shown), [false, false], 'and its activity');
});

t.test('with the listener connection gone, the database decides (and the cache comes back)', async (t) => {
  const m = await a.member(org);
  t.ok(await bothAnswer(m.key, 200));
  // Kill every LISTEN connection: the instances' caches must stop serving at once.
  await a.sql(`select pg_terminate_backend(pid) from pg_stat_activity where (query ilike 'listen %' or query = 'select 1') and pid <> pg_backend_pid() and datname = current_database()`);
  await a.sql('update api_key set revoked_at = now() where id = ?', [m.keyId]);
  t.ok(await bothAnswer(m.key, 401), 'revocation applies while the listener is down');
  const n = await a.member(org);
  t.ok(await bothAnswer(n.key, 200), 'valid keys still work');
  // The listener reconnects within a few seconds; revocation still applies at once afterwards.
  await new Promise((r) => setTimeout(r, 2500));
  t.ok(await bothAnswer(n.key, 200));
  await a.sql('update api_key set revoked_at = now() where id = ?', [n.keyId]);
  t.ok(await bothAnswer(n.key, 401), 'after reconnecting');
});
