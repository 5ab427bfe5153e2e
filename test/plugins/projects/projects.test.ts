import t from 'tap';
import { startTestServer, type Member } from '../../support/server.ts';

const server = await startTestServer(t);
const org = await server.organization('Acme');
const other = await server.organization('Other');
const admin = await server.admin(org);
const alice = await server.member(org);
const bob = await server.member(org);
const outsider = await server.admin(other);

const body = (extra: Record<string, unknown> = {}) => ({ code: 'P-1', name: 'Project', description: 'About it', ...extra });

async function create(owner: Member, extra: Record<string, unknown> = {}) {
  const res = await server.post('/api/v1/projects', body(extra), { key: owner.key });
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.text}`);
  return res.body;
}

t.test('create returns 201 with the project; the creator is a member', async (t) => {
  const res = await server.post('/api/v1/projects', body({ visibility: 'PRIVATE' }), { key: alice.key });
  t.equal(res.status, 201);
  t.match(res.body, { code: 'P-1', name: 'Project', description: 'About it', visibility: 'PRIVATE', status: 'ACTIVE', archived: false, organizationId: org, createdById: alice.organizationUserId });
  t.match(res.body.id, /^[0-9a-f-]{36}$/);
  const got = await server.get(`/api/v1/projects/${res.body.id}`, { key: alice.key });
  t.equal(got.status, 200);
  t.same(got.body, res.body);
  const [activity] = await server.sql<{ event_type: string; category: string; organization_user_id: string }>(
    'select event_type, category, organization_user_id from activity where project_id = ?', [res.body.id]);
  t.same(activity, { event_type: 'project.created', category: 'RESEARCH', organization_user_id: alice.organizationUserId });
});

t.test('blank code and description are validation errors with one item each', async (t) => {
  const res = await server.post('/api/v1/projects', { code: '  ', name: 'x', description: '' }, { key: alice.key });
  t.equal(res.status, 400);
  t.equal(res.body.statusCode, 400);
  t.equal(res.body.error, 'Bad Request');
  t.equal(res.body.path, '/api/v1/projects');
  t.same(res.body.errors, [
    { field: 'code', message: 'must not be blank' },
    { field: 'description', message: 'must not be blank' },
  ]);
  t.match(res.body.details, /code: must not be blank/);
});

t.test('visibility decides who views and who contributes', async (t) => {
  const pub = await create(alice, { visibility: 'PUBLIC' });
  const prot = await create(alice, { visibility: 'PROTECTED' });
  const priv = await create(alice, { visibility: 'PRIVATE' });
  const view = async (m: Member, id: string) => (await server.get(`/api/v1/projects/${id}`, { key: m.key })).status;
  const edit = async (m: Member, id: string) => (await server.put(`/api/v1/projects/${id}`, { name: 'renamed' }, { key: m.key })).status;

  t.same([await view(bob, pub.id), await view(bob, prot.id), await view(bob, priv.id)], [200, 200, 404]);
  t.same([await edit(bob, pub.id), await edit(bob, prot.id), await edit(bob, priv.id)], [200, 403, 404]);
  t.same([await view(admin, priv.id), await edit(admin, priv.id)], [200, 200]);
  t.same([await view(outsider, pub.id), await edit(outsider, pub.id)], [404, 404]);
  t.same([await view(alice, priv.id), await edit(alice, priv.id)], [200, 200]);

  const forbidden = await server.put(`/api/v1/projects/${prot.id}`, { name: 'x' }, { key: bob.key });
  t.equal(forbidden.text, '', '403 has an empty body');
});

t.test('list filters visibility in SQL: totals match what the caller may see', async (t) => {
  const org2 = await server.organization();
  const owner = await server.member(org2);
  const viewer = await server.member(org2);
  for (const visibility of ['PUBLIC', 'PROTECTED', 'PRIVATE', 'PRIVATE', 'PRIVATE']) await create(owner, { visibility });
  const seen = await server.get('/api/v1/projects?size=1', { key: viewer.key });
  t.equal(seen.status, 200);
  t.equal(seen.body.totalElements, 2);
  t.equal(seen.body.totalPages, 2);
  t.equal(seen.body.content.length, 1);
  const all = await server.get('/api/v1/projects', { key: owner.key });
  t.equal(all.body.totalElements, 5);
});
