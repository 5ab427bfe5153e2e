import t from 'tap';
import { startTestServer } from '../../support/server.ts';
import { startElnAStub } from '../../support/stubs/eln-a.ts';
import { activityOf, created, integration, settled } from '../../support/stubs/eln-support.ts';

// Runs are presumed dead after 2 s, so the "restarted process" picks the killed run up quickly.
const server = await startTestServer(t, {
  plugins: ['users', 'projects', 'studies', 'assay-types', 'assays', 'integrations', 'eln-a'],
  jobs: true,
  jobExpireInSeconds: 2,
});
const org = await server.organization();
const alice = await server.member(org);
const api = (p: string) => '/api/v1' + p;

t.test('a process killed between the folder and the entry resumes after restart: one folder, one entry, ACTIVE', async (t) => {
  const stub = await startElnAStub(t);
  const root = stub.addFolder('Root').id;
  const integrationId = await integration(server, org, 'ELN_A', { baseUrl: stub.url, timeoutMs: 1000 }, { token: stub.token });
  const p = created(await server.post(api('/projects'), { code: 'R', name: 'R', description: 'd', elnA: { integrationId, folderId: root } }, { key: alice.key }));
  // The folder is made; the entry call never gets an answer, and the process dies meanwhile.
  stub.fail({ mode: 'hang', match: (r) => r.path === '/api/entries' });
  const s = created(await server.post(api('/studies'), { projectId: p.id, name: 'Crash', elnA: {} }, { key: alice.key }));
  await server.waitFor(() => stub.calls('POST', '/api/entries').length === 1, 10_000, 'the entry call');
  await server.jobs.abandon();
  const [step] = await server.sql<{ status: string; result: { folderId?: string } }>('select status, result from provisioning_step where record_id = ?', [s.id]);
  t.equal(step.status, 'RUNNING');
  t.ok(step.result?.folderId, 'the folder id was kept as progress before the crash');
  t.equal((await server.get(api(`/studies/${s.id}`), { key: alice.key })).body.status, 'INITIALIZING');

  await server.startJobs(); // the restarted process
  const study = await settled(server, api(`/studies/${s.id}`), alice.key);
  t.equal(study.status, 'ACTIVE');
  t.equal(stub.calls('POST', '/api/folders').length, 1, 'the folder was not asked for again');
  t.equal(stub.childrenOf(root).length, 1);
  t.equal(stub.entries.size, 1, 'exactly one entry');
  t.same(study.elnA, { integrationId, folderId: step.result.folderId, entryId: [...stub.entries.keys()][0], templateId: null });
  const activity = await activityOf(server, 'study_id', s.id);
  t.equal(activity.filter((a) => a.event_type === 'eln_a.folder_created').length, 1);
  t.equal(activity.filter((a) => a.event_type === 'eln_a.entry_created').length, 1);
  t.equal(activity.filter((a) => a.event_type === 'study.initialization_failed').length, 0);
});
