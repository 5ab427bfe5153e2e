import t from 'tap';
import { startTestServer } from '../../support/server.ts';
import { startElnBStub } from '../../support/stubs/eln-b.ts';
import { bootstrapIntegrations } from '../../support/stubs/eln-support.ts';

// eln-a disabled, eln-b enabled: elnA is refused with a clear 400, everything else works.
const server = await startTestServer(t, { plugins: ['users', 'projects', 'studies', 'assay-types', 'assays', 'integrations', 'eln-b'], jobs: true });
const org = await server.organization();
const admin = await server.admin(org);
const api = (p: string) => '/api/v1' + p;
const NOT_ENABLED = /elnA: is not supported in this deployment: the eln-a plugin is not enabled/;

t.test('elnA on projects, studies and assays is a 400 naming the plugin; nothing is created', async (t) => {
  const elnA = { integrationId: crypto.randomUUID(), folderId: 'f-1' };
  let res = await server.post(api('/projects'), { code: 'X', name: 'X', description: 'd', elnA }, { key: admin.key });
  t.equal(res.status, 400);
  t.match(res.body.details, NOT_ENABLED);
  t.equal((await server.sql<{ n: number }>('select count(*)::int as n from project where organization_id = ?', [org]))[0].n, 0);

  const p = (await server.post(api('/projects'), { code: 'P', name: 'P', description: 'd' }, { key: admin.key })).body;
  t.equal(p.status, 'ACTIVE');
  t.notOk('elnA' in p);
  res = await server.post(api('/studies'), { projectId: p.id, name: 'S', elnA: {} }, { key: admin.key });
  t.equal(res.status, 400);
  t.match(res.body.details, NOT_ENABLED);

  const s = (await server.post(api('/studies'), { projectId: p.id, name: 'S' }, { key: admin.key })).body;
  const type = (await server.post(api('/assay-types'), { name: 'T', status: 'ACTIVE' }, { key: admin.key })).body;
  res = await server.post(api('/assays'), { studyId: s.id, assayTypeId: type.id, name: 'A', elnA: { templateId: 'x' } }, { key: admin.key });
  t.equal(res.status, 400);
  t.match(res.body.details, NOT_ENABLED);
  res = await server.post(api('/assays'), { studyId: s.id, assayTypeId: type.id, name: 'A' }, { key: admin.key });
  t.equal(res.status, 201, res.text);
});

t.test('ELN B keeps working without ELN A', async (t) => {
  const stub = await startElnBStub(t);
  const container = stub.addProject('Lab').id;
  const { b } = await bootstrapIntegrations(server, [
    { ref: 'b', organization: org, type: 'ELN_B', name: 'B', settings: { baseUrl: stub.url }, credentials: { apiKey: stub.apiKey } },
  ]);
  const res = await server.post(api('/projects'), { code: 'B', name: 'B', description: 'd', elnB: { integrationId: b, projectId: container } }, { key: admin.key });
  t.equal(res.status, 201, res.text);
  t.same(res.body.elnB, { integrationId: b, projectId: container });
  t.equal((await server.post(api('/studies'), { projectId: res.body.id, name: 'S', useElnB: true }, { key: admin.key })).status, 201);
});
