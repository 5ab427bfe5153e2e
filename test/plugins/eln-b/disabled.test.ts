import t from 'tap';
import { startTestServer } from '../../support/server.ts';
import { startElnAStub } from '../../support/stubs/eln-a.ts';
import { bootstrapIntegrations } from '../../support/stubs/eln-support.ts';

// eln-b disabled, eln-a enabled: elnB / useElnB are refused with a clear 400, everything else works.
const server = await startTestServer(t, { plugins: ['users', 'projects', 'studies', 'assay-types', 'assays', 'integrations', 'eln-a'], jobs: true });
const org = await server.organization();
const admin = await server.admin(org);
const api = (p: string) => '/api/v1' + p;
const notEnabled = (field: string) => new RegExp(`${field}: is not supported in this deployment: the eln-b plugin is not enabled`);

t.test('elnB on projects and useElnB on studies and assays are a 400 naming the plugin', async (t) => {
  let res = await server.post(api('/projects'), { code: 'X', name: 'X', description: 'd', elnB: { integrationId: crypto.randomUUID(), projectId: 1 } }, { key: admin.key });
  t.equal(res.status, 400);
  t.match(res.body.details, notEnabled('elnB'));
  t.equal((await server.sql<{ n: number }>('select count(*)::int as n from project where organization_id = ?', [org]))[0].n, 0);

  const p = (await server.post(api('/projects'), { code: 'P', name: 'P', description: 'd' }, { key: admin.key })).body;
  res = await server.post(api('/studies'), { projectId: p.id, name: 'S', useElnB: true }, { key: admin.key });
  t.equal(res.status, 400);
  t.match(res.body.details, notEnabled('useElnB'));
  const s = (await server.post(api('/studies'), { projectId: p.id, name: 'S' }, { key: admin.key })).body;
  t.equal(s.status, 'ACTIVE');
  t.notOk('elnB' in s);
  const type = (await server.post(api('/assay-types'), { name: 'T', status: 'ACTIVE' }, { key: admin.key })).body;
  res = await server.post(api('/assays'), { studyId: s.id, assayTypeId: type.id, name: 'A', useElnB: false }, { key: admin.key });
  t.equal(res.status, 400);
  t.match(res.body.details, notEnabled('useElnB'));
});

t.test('ELN A keeps working without ELN B', async (t) => {
  const stub = await startElnAStub(t);
  const root = stub.addFolder('Root').id;
  const { a } = await bootstrapIntegrations(server, [
    { ref: 'a', organization: org, type: 'ELN_A', name: 'A', settings: { baseUrl: stub.url }, credentials: { token: stub.token } },
  ]);
  const res = await server.post(api('/projects'), { code: 'A', name: 'A', description: 'd', elnA: { integrationId: a, folderId: root } }, { key: admin.key });
  t.equal(res.status, 201, res.text);
  t.same(res.body.elnA, { integrationId: a, folderId: root });
  t.equal((await server.post(api('/studies'), { projectId: res.body.id, name: 'S', elnA: {} }, { key: admin.key })).status, 201);
});
