import { randomUUID } from 'node:crypto';
import t, { type Test } from 'tap';
import type { Member } from '../../support/server.ts';
import { connectMcp, expectToolMatchesRest } from '../../support/mcp.ts';
import { startElnAStub, type ElnAStub } from '../../support/stubs/eln-a.ts';
import { activityOf, bootstrapIntegrations, countRows, created, elnTestbed, integration, settled } from '../../support/stubs/eln-support.ts';

const { server, org, otherOrg, alice, bob, assayTypeId } = await elnTestbed(t, ['eln-a']);
const api = (p: string) => '/api/v1' + p;

/** A stub vendor with a root folder, and an ELN_A integration of the organization pointing at it. */
async function vendor(t: Test, settings: Record<string, unknown> = {}): Promise<{ stub: ElnAStub; root: string; integrationId: string }> {
  const stub = await startElnAStub(t, `token-${randomUUID()}`);
  const root = stub.addFolder('Lab notebook').id;
  return { stub, root, integrationId: await integration(server, org, 'ELN_A', { baseUrl: stub.url, ...settings }, { token: stub.token }) };
}

async function createProject(who: Member, extra: Record<string, unknown> = {}) {
  return server.post(api('/projects'), { code: 'ELN', name: 'ELN project', description: 'notebook', visibility: 'PRIVATE', ...extra }, { key: who.key });
}

/** A project linked to the vendor's root folder (ACTIVE at once: the folder was checked). */
async function linkedProject(v: { root: string; integrationId: string }, who: Member = alice) {
  return created(await createProject(who, { elnA: { integrationId: v.integrationId, folderId: v.root } }));
}

async function createStudy(projectId: string, extra: Record<string, unknown> = {}, who: Member = alice) {
  return server.post(api('/studies'), { projectId, name: 'Dose response', ...extra }, { key: who.key });
}

async function createAssay(studyId: string, extra: Record<string, unknown> = {}, who: Member = alice) {
  return server.post(api('/assays'), { studyId, assayTypeId, name: 'Plate 1', ...extra }, { key: who.key });
}

const integrations = await bootstrapIntegrations(server, [
  { ref: 'elnB', organization: org, type: 'ELN_B', name: 'Other notebook', settings: { baseUrl: 'http://127.0.0.1:9' }, credentials: { apiKey: 'k' } },
  { ref: 'noUrl', organization: org, type: 'ELN_A', name: 'Unconfigured', settings: {}, credentials: { token: 't' } },
  { ref: 'theirs', organization: otherOrg, type: 'ELN_A', name: 'Their notebook', settings: { baseUrl: 'http://127.0.0.1:9' }, credentials: { token: 't' } },
]);

t.test('a project links an existing ELN A folder: one check with the token, nothing created, link shown', async (t) => {
  const v = await vendor(t);
  const res = await createProject(alice, { elnA: { integrationId: v.integrationId, folderId: v.root } });
  t.equal(res.status, 201, res.text);
  t.equal(res.body.status, 'ACTIVE', 'no provisioning needed: the folder was checked at once');
  t.same(res.body.elnA, { integrationId: v.integrationId, folderId: v.root });

  t.same(
    v.stub.requests.map((r) => `${r.method} ${r.path}`),
    [`GET /api/folders/${v.root}`],
    'exactly one vendor call, and nothing is created in the ELN',
  );
  t.equal(v.stub.requests[0].headers.authorization, `Bearer ${v.stub.token}`);
  t.equal(v.stub.folders.size, 1);

  t.same((await server.get(api(`/projects/${res.body.id}`), { key: alice.key })).body.elnA, res.body.elnA);
  const list = await server.get(api('/projects?size=100'), { key: alice.key });
  t.same(list.body.content.find((p: { id: string }) => p.id === res.body.id).elnA, res.body.elnA);
  t.notOk(list.body.content.find((p: { id: string; elnA?: unknown }) => p.id !== res.body.id && p.elnA), 'unlinked projects show no elnA');

  const [linked] = (await activityOf(server, 'project_id', res.body.id)).filter((a) => a.event_type === 'eln_a.folder_linked');
  t.match(linked, { category: 'RESEARCH', data: { integrationId: v.integrationId, folderId: v.root, verified: true } });
});

t.test('project link validation: missing folder, wrong or foreign integration, shape; nothing stored on failure', async (t) => {
  const v = await vendor(t);
  const before = await countRows(server, 'select count(*)::int as n from project where organization_id = ?', [org]);
  const cases: [string, unknown, number, RegExp][] = [
    ['folder missing in the ELN', { integrationId: v.integrationId, folderId: 'f-missing' }, 400, /elnA\.folderId: folder f-missing does not exist in ELN A/],
    ['integration of another type', { integrationId: integrations.elnB, folderId: v.root }, 400, /ELN_A/],
    ['integration without a base URL', { integrationId: integrations.noUrl, folderId: v.root }, 400, /baseUrl/],
    ['another organization', { integrationId: integrations.theirs, folderId: v.root }, 404, new RegExp(integrations.theirs)],
    ['unknown integration', { integrationId: randomUUID(), folderId: v.root }, 404, /not found/],
    ['blank folder', { integrationId: v.integrationId, folderId: ' ' }, 400, /elnA\.folderId: must not be blank/],
    ['no folder', { integrationId: v.integrationId }, 400, /elnA\.folderId: is required/],
    ['not a UUID', { integrationId: 'x', folderId: v.root }, 400, /elnA\.integrationId: must be a UUID/],
  ];
  for (const [what, elnA, status, message] of cases) {
    const res = await createProject(alice, { elnA });
    t.equal(res.status, status, `${what}: ${res.text}`);
    t.match(`${res.body?.message} ${res.body?.details}`, message, what);
  }
  t.equal(await countRows(server, 'select count(*)::int as n from project where organization_id = ?', [org]), before, 'no project was created');
  t.equal(await countRows(server, 'select count(*)::int as n from eln_a_link l where not exists (select 1 from project p where p.id = l.record_id) and l.record_kind = ?', ['project']), 0, 'no link was stored');
  t.notOk(v.stub.requests.some((r) => r.method !== 'GET'), 'nothing was created in the ELN');
});

t.test('elnA is create only: an update ignores it and the link stays', async (t) => {
  const v = await vendor(t);
  const p = await linkedProject(v);
  const res = await server.put(api(`/projects/${p.id}`), { name: 'renamed', elnA: { integrationId: v.integrationId, folderId: 'f-other' } }, { key: alice.key });
  t.equal(res.status, 200, res.text);
  t.same(res.body.elnA, { integrationId: v.integrationId, folderId: v.root });
  t.equal(v.stub.requests.length, 1, 'no vendor call for the update');
});

t.test('a study with a template gets a folder under the project folder and an entry from the template', async (t) => {
  const v = await vendor(t);
  v.stub.addTemplate('tpl-dose', 'Dose response', ['compound', 'doses']);
  const p = await linkedProject(v);
  const res = await createStudy(p.id, { elnA: { templateId: 'tpl-dose', templateFields: { compound: 'ABC-1', doses: [1, 10] } } });
  t.equal(res.status, 201, res.text);
  t.equal(res.body.status, 'INITIALIZING');
  t.same(res.body.elnA, { integrationId: v.integrationId, folderId: null, entryId: null, templateId: 'tpl-dose' });

  const study = await settled(server, api(`/studies/${res.body.id}`), alice.key);
  t.equal(study.status, 'ACTIVE');
  const [folder] = v.stub.childrenOf(v.root);
  t.match(folder, { name: 'Dose response', parentId: v.root });
  const [entry] = v.stub.entriesIn(folder.id);
  t.match(entry, { name: 'Dose response', templateId: 'tpl-dose', fields: { compound: 'ABC-1', doses: [1, 10] } });
  t.same(study.elnA, { integrationId: v.integrationId, folderId: folder.id, entryId: entry.id, templateId: 'tpl-dose' });

  // The request checked the template; the step created the folder, then the entry.
  const calls = v.stub.requests.map((r) => `${r.method} ${r.path}`);
  t.same(calls.slice(1), ['GET /api/templates/tpl-dose', 'POST /api/folders', 'POST /api/entries']);
  const [postFolder, postEntry] = [v.stub.calls('POST', '/api/folders')[0], v.stub.calls('POST', '/api/entries')[0]];
  t.same(postFolder.body, { parentId: v.root, name: 'Dose response' });
  t.same(postEntry.body, { folderId: folder.id, name: 'Dose response', templateId: 'tpl-dose', fields: { compound: 'ABC-1', doses: [1, 10] } });
  t.equal(postFolder.headers['idempotency-key'], `labdata-study-${study.id}-folder`);
  t.equal(postEntry.headers['idempotency-key'], `labdata-study-${study.id}-entry`);
  t.ok(v.stub.requests.every((r) => r.headers.authorization === `Bearer ${v.stub.token}`));

  const activity = await activityOf(server, 'study_id', study.id);
  t.match(
    activity.find((a) => a.event_type === 'eln_a.folder_created'),
    { category: 'RESEARCH', project_id: p.id, study_id: study.id, data: { integrationId: v.integrationId, folderId: folder.id, parentFolderId: v.root, name: 'Dose response' } },
  );
  t.match(
    activity.find((a) => a.event_type === 'eln_a.entry_created'),
    { category: 'RESEARCH', project_id: p.id, study_id: study.id, data: { integrationId: v.integrationId, folderId: folder.id, entryId: entry.id, templateId: 'tpl-dose' } },
  );
  t.match(activity.find((a) => a.event_type === 'study.status_changed'), { data: { oldStatus: 'INITIALIZING', newStatus: 'ACTIVE' } });
});

t.test('a study without templateId gets a blank entry (no template call, no fields)', async (t) => {
  const v = await vendor(t);
  const p = await linkedProject(v);
  const res = await createStudy(p.id, { name: 'Blank', elnA: {} });
  t.equal(res.status, 201, res.text);
  const study = await settled(server, api(`/studies/${res.body.id}`), alice.key);
  t.equal(study.status, 'ACTIVE');
  t.same(v.stub.calls('POST', '/api/entries')[0].body, { folderId: study.elnA.folderId, name: 'Blank' });
  t.same(v.stub.calls('GET', /^\/api\/templates/), []);
  t.match(v.stub.entries.get(study.elnA.entryId), { templateId: null, fields: {} });
  t.equal(study.elnA.templateId, null);
});

t.test('a study without elnA is not provisioned, even in a linked project', async (t) => {
  const v = await vendor(t);
  const p = await linkedProject(v);
  const res = await createStudy(p.id);
  t.equal(res.status, 201);
  t.equal(res.body.status, 'ACTIVE');
  t.notOk('elnA' in res.body);
  t.equal(v.stub.requests.length, 1, 'only the project link check');
});

t.test('study elnA validation: the project must have an ELN A folder; template and its fields must exist', async (t) => {
  const v = await vendor(t);
  v.stub.addTemplate('tpl', 'Protocol', ['compound']);
  const p = await linkedProject(v);
  const unlinked = await created(await createProject(alice));
  const cases: [string, string, unknown, RegExp][] = [
    ['project without ELN A', unlinked.id, {}, /elnA: the study's project .* has no ELN A folder/],
    ['unknown template', p.id, { templateId: 'nope' }, /elnA\.templateId: template nope does not exist in ELN A/],
    ['unknown template field', p.id, { templateId: 'tpl', templateFields: { colour: 'red' } }, /elnA\.templateFields\.colour: is not a field of template tpl/],
    ['fields without a template', p.id, { templateFields: { compound: 'X' } }, /elnA\.templateFields: needs elnA\.templateId/],
    ['blank template', p.id, { templateId: '' }, /elnA\.templateId: must not be blank/],
  ];
  for (const [what, projectId, elnA, message] of cases) {
    const res = await createStudy(projectId, { name: `bad ${what}`, elnA });
    t.equal(res.status, 400, `${what}: ${res.text}`);
    t.match(`${res.body.message} ${res.body.details}`, message, what);
    t.equal(await countRows(server, 'select count(*)::int as n from study where name = ?', [`bad ${what}`]), 0, `${what}: no study`);
  }
  t.same(v.stub.calls('POST'), [], 'nothing was created in the ELN');
});

t.test('only contributors create a study with elnA; the vendor is not called otherwise', async (t) => {
  const v = await vendor(t);
  const p = await created(await createProject(alice, { visibility: 'PROTECTED', elnA: { integrationId: v.integrationId, folderId: v.root } }));
  const res = await createStudy(p.id, { elnA: {} }, bob);
  t.equal(res.status, 403);
  t.equal(v.stub.requests.length, 1);
});

t.test("an assay gets a folder under its study's folder and an entry in it", async (t) => {
  const v = await vendor(t);
  v.stub.addTemplate('tpl-plate', 'Plate', ['plate']);
  const p = await linkedProject(v);
  const study = await settled(server, api(`/studies/${(await created(await createStudy(p.id, { elnA: {} }))).id}`), alice.key);
  const res = await createAssay(study.id, { elnA: { templateId: 'tpl-plate', templateFields: { plate: 'P-7' } } });
  t.equal(res.status, 201, res.text);
  t.equal(res.body.status, 'INITIALIZING');
  const assay = await settled(server, api(`/assays/${res.body.id}`), alice.key);
  t.equal(assay.status, 'ACTIVE');
  const [folder] = v.stub.childrenOf(study.elnA.folderId);
  t.match(folder, { name: 'Plate 1', parentId: study.elnA.folderId });
  t.match(v.stub.entriesIn(folder.id), [{ name: 'Plate 1', templateId: 'tpl-plate', fields: { plate: 'P-7' } }]);
  t.same(assay.elnA, { integrationId: v.integrationId, folderId: folder.id, entryId: v.stub.entriesIn(folder.id)[0].id, templateId: 'tpl-plate' });
  t.equal(v.stub.calls('POST', '/api/folders').at(-1)!.headers['idempotency-key'], `labdata-assay-${assay.id}-folder`);
  const activity = await activityOf(server, 'assay_id', assay.id);
  for (const type of ['eln_a.folder_created', 'eln_a.entry_created']) {
    t.match(activity.find((a) => a.event_type === type), { project_id: p.id, study_id: study.id, assay_id: assay.id }, type);
  }
});

t.test("an assay created while its study's folder is still pending waits for it", async (t) => {
  const v = await vendor(t);
  const p = await linkedProject(v);
  // The study's folder call fails twice: the assay's step finds no parent folder yet and retries.
  v.stub.fail({ times: 2, match: (r) => r.method === 'POST' && r.path === '/api/folders' });
  const s = await created(await createStudy(p.id, { elnA: {} }));
  const a = await created(await createAssay(s.id, { elnA: {} }));
  const study = await settled(server, api(`/studies/${s.id}`), alice.key);
  const assay = await settled(server, api(`/assays/${a.id}`), alice.key);
  t.equal(study.status, 'ACTIVE');
  t.equal(assay.status, 'ACTIVE');
  t.equal(v.stub.folders.get(assay.elnA.folderId)?.parentId, study.elnA.folderId);
});

t.test("assay elnA needs a study with an ELN A folder", async (t) => {
  const v = await vendor(t);
  const p = await linkedProject(v);
  const s = await created(await createStudy(p.id));
  const res = await createAssay(s.id, { name: 'orphan', elnA: {} });
  t.equal(res.status, 400, res.text);
  t.match(res.body.details, /elnA: the assay's study .* has no ELN A folder/);
  t.equal(await countRows(server, 'select count(*)::int as n from assay where study_id = ?', [s.id]), 0);
});

t.test('vendor 500 then recovery: retried by the queue, ACTIVE, exactly one folder and one entry', async (t) => {
  const v = await vendor(t);
  const p = await linkedProject(v);
  v.stub.fail({ times: 2, status: 500, match: (r) => r.path === '/api/folders' && r.method === 'POST' });
  // The entry is created but its response is lost: the retry must get the same entry back.
  v.stub.fail({ times: 1, mode: 'after', match: (r) => r.path === '/api/entries' });
  const s = await created(await createStudy(p.id, { elnA: {} }));
  const study = await settled(server, api(`/studies/${s.id}`), alice.key);
  t.equal(study.status, 'ACTIVE');
  t.equal(v.stub.calls('POST', '/api/folders').length, 3, 'two failures, then success');
  t.equal(v.stub.calls('POST', '/api/entries').length, 2, 'the lost response was retried');
  t.equal(v.stub.childrenOf(v.root).length, 1, 'exactly one folder');
  t.equal(v.stub.entries.size, 1, 'exactly one entry');
  t.equal(study.elnA.entryId, [...v.stub.entries.keys()][0]);
  const activity = await activityOf(server, 'study_id', s.id);
  t.equal(activity.filter((a) => a.event_type === 'eln_a.folder_created').length, 1, 'one folder_created record');
  t.equal(activity.filter((a) => a.event_type === 'eln_a.entry_created').length, 1, 'one entry_created record');
});

t.test('vendor down past retries: INITIALIZATION_FAILED naming the reason; retry after recovery: ACTIVE, one folder', async (t) => {
  const v = await vendor(t);
  const p = await linkedProject(v);
  v.stub.down();
  const s = await created(await createStudy(p.id, { elnA: {} }));
  const failed = await settled(server, api(`/studies/${s.id}`), alice.key);
  t.equal(failed.status, 'INITIALIZATION_FAILED');
  t.same(failed.elnA, { integrationId: v.integrationId, folderId: null, entryId: null, templateId: null });
  t.equal(v.stub.calls('POST', '/api/folders').length, 9, 'the first run and 8 retries');
  const [reason] = (await activityOf(server, 'study_id', s.id)).filter((a) => a.event_type === 'study.initialization_failed');
  t.match(reason, { category: 'RESEARCH', project_id: p.id, data: { step: 'eln-a.create-folder-and-entry', reason: /ELN A is unreachable/ } });

  v.stub.recover();
  const retry = await server.post(api(`/studies/${s.id}/retry-initialization`), undefined, { key: alice.key });
  t.equal(retry.status, 200, retry.text);
  t.equal(retry.body.status, 'INITIALIZING');
  const study = await settled(server, api(`/studies/${s.id}`), alice.key);
  t.equal(study.status, 'ACTIVE');
  t.equal(v.stub.childrenOf(v.root).length, 1);
  t.equal(v.stub.entries.size, 1);
});

t.test('a refusal no retry can fix fails the step at once (parent folder gone before the step ran)', async (t) => {
  const v = await vendor(t);
  const p = await linkedProject(v);
  v.stub.fail({ times: 1, status: 404, match: (r) => r.path === '/api/folders' && r.method === 'POST' });
  const s = await created(await createStudy(p.id, { elnA: {} }));
  const study = await settled(server, api(`/studies/${s.id}`), alice.key);
  t.equal(study.status, 'INITIALIZATION_FAILED');
  t.equal(v.stub.calls('POST', '/api/folders').length, 1, 'not retried');
  const [reason] = (await activityOf(server, 'study_id', s.id)).filter((a) => a.event_type === 'study.initialization_failed');
  t.match(reason.data.reason, /ELN A POST \/api\/folders failed: HTTP 404/);
});

t.test('ELN A down while a project is linked: accepted, verified by a step, then ACTIVE', async (t) => {
  const v = await vendor(t, { checkTimeoutMs: 2000 });
  v.stub.fail({ times: 1, status: 503 });
  const res = await createProject(alice, { elnA: { integrationId: v.integrationId, folderId: v.root } });
  t.equal(res.status, 201, res.text);
  t.equal(res.body.status, 'INITIALIZING');
  const project = await settled(server, api(`/projects/${res.body.id}`), alice.key);
  t.equal(project.status, 'ACTIVE');
  const activity = await activityOf(server, 'project_id', project.id);
  t.match(activity.find((a) => a.event_type === 'eln_a.folder_linked'), { data: { verified: false } });
  t.match(activity.find((a) => a.event_type === 'eln_a.folder_verified'), { data: { integrationId: v.integrationId, folderId: v.root } });

  // Not reachable at link time and the folder turns out not to exist: INITIALIZATION_FAILED.
  v.stub.fail({ times: 1, mode: 'down' });
  const missing = await created(await createProject(alice, { elnA: { integrationId: v.integrationId, folderId: 'f-gone' } }));
  t.equal(missing.status, 'INITIALIZING');
  const failed = await settled(server, api(`/projects/${missing.id}`), alice.key);
  t.equal(failed.status, 'INITIALIZATION_FAILED');
  const [reason] = (await activityOf(server, 'project_id', missing.id)).filter((a) => a.event_type === 'project.initialization_failed');
  t.match(reason.data, { step: 'eln-a.verify-folder', reason: 'folder f-gone does not exist in ELN A' });
  // A vendor that never answers: the request gives up after checkTimeoutMs, and the step verifies.
  const slow = await vendor(t, { checkTimeoutMs: 300 });
  slow.stub.fail({ times: 1, mode: 'hang' });
  const res2 = await createProject(alice, { elnA: { integrationId: slow.integrationId, folderId: slow.root } });
  t.equal(res2.status, 201, res2.text);
  t.equal(res2.body.status, 'INITIALIZING');
  t.equal((await settled(server, api(`/projects/${res2.body.id}`), alice.key)).status, 'ACTIVE');
});

t.test('deleting a project forgets the links of it, its studies and assays; the ELN keeps its folders', async (t) => {
  const v = await vendor(t);
  const p = await linkedProject(v);
  const s = await settled(server, api(`/studies/${(await created(await createStudy(p.id, { elnA: {} }))).id}`), alice.key);
  const a = await settled(server, api(`/assays/${(await created(await createAssay(s.id, { elnA: {} }))).id}`), alice.key);
  t.equal(await countRows(server, 'select count(*)::int as n from eln_a_link where record_id in (?, ?, ?)', [p.id, s.id, a.id]), 3);
  t.equal((await server.delete(api(`/projects/${p.id}`), { key: alice.key })).status, 204);
  t.equal(await countRows(server, 'select count(*)::int as n from eln_a_link where record_id in (?, ?, ?)', [p.id, s.id, a.id]), 0);
  t.equal(v.stub.folders.size, 3);
});

t.test('get_project, get_study and get_assay tools show the ELN A link exactly as REST', async (t) => {
  const v = await vendor(t);
  const p = await linkedProject(v);
  const s = await settled(server, api(`/studies/${(await created(await createStudy(p.id, { elnA: {} }))).id}`), alice.key);
  const a = await settled(server, api(`/assays/${(await created(await createAssay(s.id, { elnA: {} }))).id}`), alice.key);
  const client = await connectMcp(server.url, { key: alice.key, teardown: (fn) => t.teardown(fn) });
  await expectToolMatchesRest(t, server, client, alice.key, 'get_project', { id: p.id }, `/projects/${p.id}`);
  await expectToolMatchesRest(t, server, client, alice.key, 'get_study', { id: s.id }, `/studies/${s.id}`);
  await expectToolMatchesRest(t, server, client, alice.key, 'get_assay', { id: a.id }, `/assays/${a.id}`);
  await expectToolMatchesRest(t, server, client, alice.key, 'list_studies_by_project', { projectId: p.id, page: 0, size: 5 }, `/projects/${p.id}/studies?page=0&size=5`);
});
