// A feed's `user` of each entry is read from the server's in-memory organization users
// (app/http/organization-users.ts), kept like the key cache: a user renamed or a membership's
// roles changed in the database shows on the very next request, on every instance sharing the
// database, and while the listener is down every request reads the database.
import t from 'tap';
import { startTestServer } from '../support/server.ts';

const plugins = ['users', 'projects', 'activity'];
const a = await startTestServer(t, { plugins });
const b = await startTestServer(t, { plugins, databaseUrl: a.databaseUrl });
const org = await a.organization('Feed users');
const boss = await a.admin(org);
const alice = await a.member(org);
const made = await a.post('/api/v1/projects', { code: 'FU', name: 'Feed users', description: 'd', visibility: 'PUBLIC' }, { key: alice.key });

/** The `user` of alice's entry on both instances' organization feeds, as the admin reads it. */
async function alicesUser() {
  const users = [];
  for (const server of [a, b]) {
    const res = await server.get('/api/v1/activity?size=50', { key: boss.key });
    const entry = res.body.content.find((e: { projectId: string; organizationUserId: string }) => e.projectId === made.body.id && e.organizationUserId === alice.organizationUserId);
    users.push(entry.user);
  }
  return users;
}

t.test('the entry names its organization user and user, as GET /users/{id} shows them', async (t) => {
  t.equal(made.status, 201);
  const [fromA, fromB] = await alicesUser();
  const direct = await a.get(`/api/v1/organization-users/${alice.organizationUserId}`, { key: boss.key });
  t.equal(direct.status, 200);
  t.same(fromA, direct.body, 'the same object as the organization user GET');
  t.same(fromA, fromB);
  t.equal(fromA.id, alice.organizationUserId);
  t.equal(fromA.user.id, alice.userId);
  t.same(fromA.roles, ['ORGANIZATION_USER']);
  // Warm: a page of known users reads no organization user.
  const statements: string[] = [];
  const { statementObserver } = await import('../../core/db/sql.ts');
  statementObserver.observe = (q) => statements.push(q.text);
  t.equal((await a.get('/api/v1/activity?size=50', { key: boss.key })).status, 200);
  statementObserver.observe = undefined;
  t.ok(statements.some((s) => /from activity a/.test(s)), 'the page was read');
  t.notOk(statements.some((s) => /from organization_user ou/.test(s)), 'its users came from memory');
});

t.test('a renamed user and changed roles show on the next request on every instance', async (t) => {
  await alicesUser(); // both instances have alice cached
  await a.sql('update app_user set display_name = ?, email = ? where id = ?', ['Alice Renamed', 'renamed@example.org', alice.userId]);
  for (const user of await alicesUser()) {
    t.equal(user.user.displayName, 'Alice Renamed');
    t.equal(user.user.email, 'renamed@example.org');
  }
  await a.setRoles(alice.organizationUserId, ['ORGANIZATION_USER', 'ORGANIZATION_ADMIN']);
  for (const user of await alicesUser()) t.same([...user.roles].sort(), ['ORGANIZATION_ADMIN', 'ORGANIZATION_USER']);
  // The single entry GET and a project's feed show the same.
  const feed = await b.get(`/api/v1/projects/${made.body.id}/activity`, { key: boss.key });
  t.equal(feed.body.content[0].user.user.displayName, 'Alice Renamed');
  const one = await b.get(`/api/v1/activity/${feed.body.content[0].id}`, { key: boss.key });
  t.same(one.body.user, feed.body.content[0].user);
});

t.test('with the listener connection gone, the feed reads its users from the database', async (t) => {
  await alicesUser();
  await a.sql(`select pg_terminate_backend(pid) from pg_stat_activity where (query ilike 'listen %' or query = 'select 1') and pid <> pg_backend_pid() and datname = current_database()`);
  await a.sql('update app_user set display_name = ? where id = ?', ['Alice While Down', alice.userId]);
  for (const user of await alicesUser()) t.equal(user.user.displayName, 'Alice While Down');
  // Back again (the listener reconnects within a second or two): a change still shows at once.
  await new Promise((r) => setTimeout(r, 2500));
  await alicesUser();
  await a.sql('update app_user set display_name = ? where id = ?', ['Alice Back', alice.userId]);
  for (const user of await alicesUser()) t.equal(user.user.displayName, 'Alice Back');
});
