import { randomUUID } from 'node:crypto';
import t, { type Test } from 'tap';
import type { Member } from '../../support/server.ts';
import { connectMcp, expectToolMatchesRest } from '../../support/mcp.ts';
import { startElnBStub, type ElnBStub } from '../../support/stubs/eln-b.ts';
import { activityOf, bootstrapIntegrations, countRows, created, elnTestbed, integration, settled } from '../../support/stubs/eln-support.ts';

const { server, org, otherOrg, alice, bob, assayTypeId } = await elnTestbed(t, ['eln-b']);
const api = (p: string) => '/api/v1' + p;

/** A stub vendor with one project container, and an ELN_B integration of the organization pointing at it. */
async function vendor(t: Test, settings: Record<string, unknown> = {}): Promise<{ stub: ElnBStub; container: number; integrationId: string }> {
  const stub = await startElnBStub(t, `key-${randomUUID()}`);
  const container = stub.addProject('Lab').id;
  return { stub, container, integrationId: await integration(server, org, 'ELN_B', { baseUrl: stub.url, ...settings }, { apiKey: stub.apiKey }) };
}

async function createProject(who: Member, extra: Record<string, unknown> = {}) {
  return server.post(api('/projects'), { code: 'ELNB', name: 'ELN B project', description: 'notebook', visibility: 'PRIVATE', ...extra }, { key: who.key });
}

async function linkedProject(v: { container: number; integrationId: string }, extra: Record<string, unknown> = {}) {
  return created(await createProject(alice, { elnB: { integrationId: v.integrationId, projectId: v.container }, ...extra }));
}

async function createStudy(projectId: string, extra: Record<string, unknown> = {}, who: Member = alice) {
  return server.post(api('/studies'), { projectId, name: 'Kinetics', ...extra }, { key: who.key });
}

async function createAssay(studyId: string, extra: Record<string, unknown> = {}) {
  return server.post(api('/assays'), { studyId, assayTypeId, name: 'Run 1', ...extra }, { key: alice.key });
}


const integrations = await bootstrapIntegrations(server, [
  { ref: 'elnA', organization: org, type: 'ELN_A', name: 'Notebook A', settings: { baseUrl: 'http://127.0.0.1:9' }, credentials: { token: 't' } },
  { ref: 'noKey', organization: org, type: 'ELN_B', name: 'No key', settings: { baseUrl: 'http://127.0.0.1:9' } },
  { ref: 'theirs', organization: otherOrg, type: 'ELN_B', name: 'Theirs', settings: { baseUrl: 'http://127.0.0.1:9' }, credentials: { apiKey: 'k' } },
]);

t.test('a project links an existing ELN B container: one check with the API key, nothing created', async (t) => {
  const v = await vendor(t);
  const res = await createProject(alice, { elnB: { integrationId: v.integrationId, projectId: v.container } });
  t.equal(res.status, 201, res.text);
  t.equal(res.body.status, 'ACTIVE');
  t.same(res.body.elnB, { integrationId: v.integrationId, projectId: v.container });
  t.same(v.stub.requests.map((r) => `${r.method} ${r.path}`), [`GET /api/projects/${v.container}`]);
  t.equal(v.stub.requests[0].headers['x-api-key'], v.stub.apiKey);
  t.equal(v.stub.entries.size, 0);
  t.same((await server.get(api(`/projects/${res.body.id}`), { key: alice.key })).body.elnB, res.body.elnB);
  const [linked] = (await activityOf(server, 'project_id', res.body.id)).filter((a) => a.event_type === 'eln_b.container_linked');
  t.match(linked, { category: 'RESEARCH', data: { integrationId: v.integrationId, projectId: v.container, verified: true } });
});

t.test('project link validation: missing container, wrong or foreign integration, shape; nothing stored', async (t) => {
  const v = await vendor(t);
  const before = await countRows(server, 'select count(*)::int as n from project where organization_id = ?', [org]);
  const cases: [string, unknown, number, RegExp][] = [
    ['container missing in the ELN', { integrationId: v.integrationId, projectId: 424242 }, 400, /elnB\.projectId: project 424242 does not exist in ELN B/],
    ['integration of another type', { integrationId: integrations.elnA, projectId: v.container }, 400, /ELN_B/],
    ['integration without an API key', { integrationId: integrations.noKey, projectId: v.container }, 400, /apiKey/],
    ['another organization', { integrationId: integrations.theirs, projectId: v.container }, 404, new RegExp(integrations.theirs)],
    ['a string project id', { integrationId: v.integrationId, projectId: String(v.container) }, 400, /elnB\.projectId/],
    ['a fractional project id', { integrationId: v.integrationId, projectId: 1.5 }, 400, /elnB\.projectId/],
    // JSON numbers past 2^53 are read rounded (…993 as …992, i.e. 2^53): the container named would not be the one meant.
    ['a project id past 2^53', { integrationId: v.integrationId, projectId: 2 ** 53 }, 400, /elnB\.projectId/],
  ];
  for (const [what, elnB, status, message] of cases) {
    const res = await createProject(alice, { elnB });
    t.equal(res.status, status, `${what}: ${res.text}`);
    t.match(`${res.body?.message} ${res.body?.details}`, message, what);
  }
  t.equal(await countRows(server, 'select count(*)::int as n from project where organization_id = ?', [org]), before);
  t.same(v.stub.calls('POST'), []);
});

t.test('a study with useElnB gets an entry titled after it in the project container', async (t) => {
  const v = await vendor(t);
  const p = await linkedProject(v);
  const res = await createStudy(p.id, { useElnB: true });
  t.equal(res.status, 201, res.text);
  t.equal(res.body.status, 'INITIALIZING');
  t.same(res.body.elnB, { integrationId: v.integrationId, projectId: v.container, entryId: null });
  const study = await settled(server, api(`/studies/${res.body.id}`), alice.key);
  t.equal(study.status, 'ACTIVE');
  const [entry] = v.stub.entriesIn(v.container);
  t.same(entry, { id: entry.id, projectId: v.container, title: 'Kinetics' });
  t.same(study.elnB, { integrationId: v.integrationId, projectId: v.container, entryId: entry.id });
  const [post] = v.stub.calls('POST', `/api/projects/${v.container}/entries`);
  t.same(post.body, { title: 'Kinetics' });
  t.equal(post.headers['idempotency-key'], `labdata-study-${study.id}-entry`);
  t.equal(post.headers['x-api-key'], v.stub.apiKey);
  const [activity] = (await activityOf(server, 'study_id', study.id)).filter((a) => a.event_type === 'eln_b.entry_created');
  t.match(activity, {
    category: 'RESEARCH',
    project_id: p.id,
    study_id: study.id,
    data: { integrationId: v.integrationId, projectId: v.container, entryId: entry.id, title: 'Kinetics' },
  });
});

t.test('an assay with useElnB gets an entry in its project container too; useElnB false does nothing', async (t) => {
  const v = await vendor(t);
  const p = await linkedProject(v);
  const s = await created(await createStudy(p.id, { useElnB: false }));
  t.equal(s.status, 'ACTIVE');
  t.notOk('elnB' in s);
  const res = await createAssay(s.id, { useElnB: true });
  t.equal(res.status, 201, res.text);
  const assay = await settled(server, api(`/assays/${res.body.id}`), alice.key);
  t.equal(assay.status, 'ACTIVE');
  t.same(v.stub.entriesIn(v.container).map((e) => e.title), ['Run 1']);
  t.equal(assay.elnB.entryId, v.stub.entriesIn(v.container)[0].id);
  t.equal(v.stub.calls('POST')[0].headers['idempotency-key'], `labdata-assay-${assay.id}-entry`);
  const [activity] = (await activityOf(server, 'assay_id', assay.id)).filter((a) => a.event_type === 'eln_b.entry_created');
  t.match(activity, { project_id: p.id, study_id: s.id, assay_id: assay.id });
});

t.test('useElnB needs a project with an ELN B container; only contributors', async (t) => {
  const v = await vendor(t);
  const unlinked = await created(await createProject(alice));
  let res = await createStudy(unlinked.id, { name: 'orphan', useElnB: true });
  t.equal(res.status, 400, res.text);
  t.match(res.body.details, /useElnB: the study's project .* has no ELN B container/);
  t.equal(await countRows(server, 'select count(*)::int as n from study where project_id = ?', [unlinked.id]), 0);

  const s = await created(await createStudy(unlinked.id));
  res = await createAssay(s.id, { useElnB: true });
  t.equal(res.status, 400, res.text);
  t.match(res.body.details, /useElnB: the assay's project .* has no ELN B container/);

  const p = await linkedProject(v, { visibility: 'PROTECTED' });
  res = await createStudy(p.id, { useElnB: true }, bob);
  t.equal(res.status, 403);
  res = await createStudy(p.id, { useElnB: 'yes' });
  t.equal(res.status, 400);
  t.same(v.stub.calls('POST'), []);
});

t.test('vendor 500 then recovery, and a lost response: ACTIVE with exactly one entry', async (t) => {
  const v = await vendor(t);
  const p = await linkedProject(v);
  v.stub.fail({ times: 2, status: 502, match: (r) => r.method === 'POST' });
  v.stub.fail({ times: 1, mode: 'after', match: (r) => r.method === 'POST' });
  const s = await created(await createStudy(p.id, { useElnB: true }));
  const study = await settled(server, api(`/studies/${s.id}`), alice.key);
  t.equal(study.status, 'ACTIVE');
  t.equal(v.stub.calls('POST').length, 4);
  t.equal(v.stub.entries.size, 1, 'exactly one entry');
  t.equal(study.elnB.entryId, [...v.stub.entries.keys()][0]);
  t.equal((await activityOf(server, 'study_id', s.id)).filter((a) => a.event_type === 'eln_b.entry_created').length, 1);
});

t.test('vendor down past retries: INITIALIZATION_FAILED naming the reason; retry after recovery: ACTIVE', async (t) => {
  const v = await vendor(t);
  const p = await linkedProject(v);
  v.stub.down();
  const s = await created(await createAssay((await created(await createStudy(p.id))).id, { useElnB: true }));
  const failed = await settled(server, api(`/assays/${s.id}`), alice.key);
  t.equal(failed.status, 'INITIALIZATION_FAILED');
  t.equal(failed.elnB.entryId, null);
  const [reason] = (await activityOf(server, 'assay_id', s.id)).filter((a) => a.event_type === 'assay.initialization_failed');
  t.match(reason, { category: 'RESEARCH', data: { step: 'eln-b.create-entry', reason: /ELN B is unreachable/ } });

  v.stub.recover();
  const retry = await server.post(api(`/assays/${s.id}/retry-initialization`), undefined, { key: alice.key });
  t.equal(retry.status, 200, retry.text);
  const assay = await settled(server, api(`/assays/${s.id}`), alice.key);
  t.equal(assay.status, 'ACTIVE');
  t.equal(v.stub.entries.size, 1);
  t.equal(assay.elnB.entryId, [...v.stub.entries.keys()][0]);
});

t.test('ELN B down while a project is linked: accepted, verified by a step, then ACTIVE', async (t) => {
  const v = await vendor(t);
  v.stub.fail({ times: 1, mode: 'down' });
  const res = await createProject(alice, { elnB: { integrationId: v.integrationId, projectId: v.container } });
  t.equal(res.status, 201, res.text);
  t.equal(res.body.status, 'INITIALIZING');
  const project = await settled(server, api(`/projects/${res.body.id}`), alice.key);
  t.equal(project.status, 'ACTIVE');
  t.match((await activityOf(server, 'project_id', project.id)).find((a) => a.event_type === 'eln_b.container_verified'), {
    data: { integrationId: v.integrationId, projectId: v.container },
  });
});

t.test('deleting a study forgets its link; get_project and get_study tools equal REST', async (t) => {
  const v = await vendor(t);
  const p = await linkedProject(v);
  const s = await settled(server, api(`/studies/${(await created(await createStudy(p.id, { useElnB: true }))).id}`), alice.key);
  const client = await connectMcp(server.url, { key: alice.key, teardown: (fn) => t.teardown(fn) });
  await expectToolMatchesRest(t, server, client, alice.key, 'get_project', { id: p.id }, `/projects/${p.id}`);
  await expectToolMatchesRest(t, server, client, alice.key, 'get_study', { id: s.id }, `/studies/${s.id}`);
  t.equal((await server.delete(api(`/studies/${s.id}`), { key: alice.key })).status, 204);
  t.equal(await countRows(server, 'select count(*)::int as n from eln_b_link where record_id = ?', [s.id]), 0);
  t.equal(v.stub.entries.size, 1, 'the entry stays in the ELN');
});
