import t from 'tap';
import { startTestServer } from '../../support/server.ts';

const server = await startTestServer(t);
const org = await server.organization('Acme');
const other = await server.organization('Other');
const admin = await server.admin(org);
const alice = await server.member(org, { displayName: 'Alice' });
const bob = await server.member(org, { displayName: 'Bob', status: 'INACTIVE' });
const carol = await server.member(org, { displayName: 'Carol' });
const outsider = await server.member(other, { displayName: 'Outsider' });
const k = { key: alice.key };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

t.test('GET /users lists the users of the caller\'s organization only', async (t) => {
  const res = await server.get('/api/v1/users?size=50', k);
  t.equal(res.status, 200);
  t.equal(res.body.totalElements, 4);
  const ids = res.body.content.map((u: { id: string }) => u.id).sort();
  t.same(ids, [admin.userId, alice.userId, bob.userId, carol.userId].sort());
  t.notOk(ids.includes(outsider.userId));
  const a = res.body.content.find((u: { id: string }) => u.id === alice.userId);
  t.match(a, { id: UUID, email: /@example\.test$/, displayName: 'Alice', createdAt: ISO });
});

t.test('GET /users/{id}: a user of the organization, 404 for anyone else', async (t) => {
  const res = await server.get(`/api/v1/users/${carol.userId}`, k);
  t.equal(res.status, 200);
  t.match(res.body, { id: carol.userId, displayName: 'Carol' });
  const foreign = await server.get(`/api/v1/users/${outsider.userId}`, k);
  t.equal(foreign.status, 404, 'a user of another organization is not found');
  t.match(foreign.body, { statusCode: 404, error: 'Not Found', path: `/api/v1/users/${outsider.userId}` });
  t.match(foreign.body.message, outsider.userId);
  t.match(foreign.body.message, /User/);
  const unknown = crypto.randomUUID();
  t.equal((await server.get(`/api/v1/users/${unknown}`, k)).status, 404);
  t.equal((await server.get('/api/v1/users/not-a-uuid', k)).status, 400);
});

t.test('GET /organization-users: members with id, organizationId, user, roles, status', async (t) => {
  const res = await server.get('/api/v1/organization-users?size=50', k);
  t.equal(res.status, 200);
  t.equal(res.body.totalElements, 4);
  const byId = new Map(res.body.content.map((ou: { id: string }) => [ou.id, ou]));
  t.same([...byId.keys()].sort(), [admin.organizationUserId, alice.organizationUserId, bob.organizationUserId, carol.organizationUserId].sort());
  t.match(byId.get(admin.organizationUserId), {
    id: admin.organizationUserId,
    organizationId: org,
    user: { id: admin.userId, email: /@example\.test$/, displayName: String, createdAt: ISO },
    roles: ['ORGANIZATION_ADMIN'],
    status: 'ACTIVE',
  });
  t.match(byId.get(bob.organizationUserId), { roles: ['ORGANIZATION_USER'], status: 'INACTIVE', user: { id: bob.userId, displayName: 'Bob' } });
  for (const ou of res.body.content) {
    for (const field of ['id', 'organizationId', 'user', 'roles', 'status']) t.ok(field in ou, field);
    t.ok(Array.isArray(ou.roles));
    t.equal(ou.organizationId, org);
  }
});

t.test('GET /organization-users/{id}: scoped to the organization', async (t) => {
  const res = await server.get(`/api/v1/organization-users/${carol.organizationUserId}`, k);
  t.equal(res.status, 200);
  t.match(res.body, { id: carol.organizationUserId, organizationId: org, user: { id: carol.userId, displayName: 'Carol' }, roles: ['ORGANIZATION_USER'], status: 'ACTIVE' });
  const foreign = await server.get(`/api/v1/organization-users/${outsider.organizationUserId}`, k);
  t.equal(foreign.status, 404);
  t.match(foreign.body.message, outsider.organizationUserId);
  // A user id is not an organization-user id.
  t.equal((await server.get(`/api/v1/organization-users/${carol.userId}`, k)).status, 404);
});

t.test('the outsider sees only their own organization', async (t) => {
  const users = await server.get('/api/v1/users', { key: outsider.key });
  t.equal(users.body.totalElements, 1);
  t.equal(users.body.content[0].id, outsider.userId);
  t.equal((await server.get(`/api/v1/users/${alice.userId}`, { key: outsider.key })).status, 404);
  t.equal((await server.get(`/api/v1/organization-users/${alice.organizationUserId}`, { key: outsider.key })).status, 404);
});

t.test('a user in two organizations appears in each, with that organization\'s membership', async (t) => {
  const em = server.orm.em.fork();
  const { addMembership } = await import('../../../app/cli/admin.ts');
  const ou = addMembership(em, { organizationId: other, userId: carol.userId, roles: ['ORGANIZATION_ADMIN'], status: 'ACTIVE' });
  await em.flush();
  const fromOther = await server.get(`/api/v1/users/${carol.userId}`, { key: outsider.key });
  t.equal(fromOther.status, 200);
  const membership = await server.get(`/api/v1/organization-users/${ou.id}`, { key: outsider.key });
  t.match(membership.body, { organizationId: other, roles: ['ORGANIZATION_ADMIN'], user: { id: carol.userId } });
  t.equal((await server.get(`/api/v1/organization-users/${ou.id}`, k)).status, 404, 'not visible from the first organization');
  const list = await server.get('/api/v1/users?size=50', k);
  t.equal(list.body.totalElements, 4, 'the first organization\'s list is unchanged');
});

t.test('paging and sorting', async (t) => {
  const pages = [];
  for (let page = 0; page < 3; page++) {
    const res = await server.get(`/api/v1/users?size=2&page=${page}&sort=displayName,asc`, k);
    t.equal(res.status, 200);
    t.match(res.body, { totalElements: 4, totalPages: 2, size: 2, number: page, first: page === 0, last: page >= 1 });
    pages.push(res.body.content.map((u: { displayName: string }) => u.displayName));
  }
  const names = pages.flat();
  t.equal(names.length, 4);
  t.same(names, [...names].sort(), 'ordered by display name across pages');
  t.same(pages[2], [], 'past the end');

  const ous = await server.get('/api/v1/organization-users?size=3&sort=displayName,desc', k);
  t.match(ous.body, { totalElements: 4, totalPages: 2, size: 3 });
  const ouNames = ous.body.content.map((o: { user: { displayName: string } }) => o.user.displayName);
  t.same(ouNames, [...ouNames].sort().reverse());
  t.equal((await server.get('/api/v1/users?sort=password,asc', k)).status, 400);
  t.equal((await server.get('/api/v1/organization-users?size=201', k)).body.size, 200, 'a larger size is capped at 200');
});

t.test('the same reads are MCP tools with the same results', async (t) => {
  const call = async (name: string, args: Record<string, unknown>) => {
    const res = await server.post('/mcp', { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }, { ...k, headers: { accept: 'application/json, text/event-stream' } });
    t.equal(res.status, 200);
    return res.body.result;
  };
  const rest = await server.get(`/api/v1/organization-users/${carol.organizationUserId}`, k);
  const tool = await call('get_organization_user', { id: carol.organizationUserId });
  t.same(tool.structuredContent, rest.body);
  const foreign = await call('get_user', { id: outsider.userId });
  t.equal(foreign.isError, true, 'another organization\'s user is a not-found tool result');
  const list = await call('list_users', { size: 2 });
  t.equal(list.structuredContent.totalElements, 4);
});
