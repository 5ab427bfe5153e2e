import t from 'tap';
import { randomUUID } from 'node:crypto';
import { createProject, createStudy, startTestServer, testCast, type Member } from '../../support/server.ts';
import { callTool, connectMcp, expectToolMatchesRest, resultText } from '../../support/mcp.ts';

const server = await startTestServer(t, { plugins: ['users', 'projects', 'studies', 'study-collections'] });
const { org, other, admin, alice, bob, outsider } = await testCast(server);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

interface Collection {
  id: string;
  name: string;
  visibility: string;
  version: number;
  studyCount: number;
  studies: { id: string }[];
}

const project = (owner: Member, visibility?: string) => createProject(server, owner, visibility);
const study = (owner: Member, projectId: string) => createStudy(server, owner, projectId);
async function collection(owner: Member, visibility = 'PRIVATE', name = 'Collection'): Promise<Collection> {
  const res = await server.post('/api/v1/study-collections', { name, visibility }, { key: owner.key });
  if (res.status !== 201) throw new Error(`collection create failed: ${res.status} ${res.text}`);
  return res.body;
}
const path = (c: { id: string }, studyId?: string) => `/api/v1/study-collections/${c.id}${studyId ? `/studies/${studyId}` : ''}`;
const activity = (collectionId: string) =>
  server.sql<{ event_type: string; category: string; data: Record<string, unknown>; project_id: string | null; study_id: string | null; organization_user_id: string }>(
    `select event_type, category, data, project_id, study_id, organization_user_id from activity where data->>'collectionId' = ? order by date`,
    [collectionId],
  );

t.test('create: 201 with the collection (owner = caller, PRIVATE by default, no studies), activity study_collection.created', async (t) => {
  const res = await server.post('/api/v1/study-collections', { name: 'Screening', description: 'Round 1' }, { key: alice.key });
  t.equal(res.status, 201);
  t.same(Object.keys(res.body).sort(), ['createdAt', 'createdById', 'description', 'id', 'name', 'organizationId', 'studies', 'studyCount', 'updatedAt', 'version', 'visibility']);
  t.match(res.body, { id: UUID, organizationId: org, name: 'Screening', description: 'Round 1', visibility: 'PRIVATE', createdById: alice.organizationUserId, studies: [], studyCount: 0 });
  t.equal(new Date(res.body.createdAt).toISOString(), res.body.createdAt, 'createdAt is ISO 8601 UTC');
  t.same((await server.get(path(res.body), { key: alice.key })).body, res.body, 'the created representation is what GET returns');

  const bare = await server.post('/api/v1/study-collections', { name: 'No description', visibility: 'PUBLIC' }, { key: bob.key });
  t.equal(bare.status, 201);
  t.match(bare.body, { description: null, visibility: 'PUBLIC', createdById: bob.organizationUserId });
  const byAdmin = await server.post('/api/v1/study-collections', { name: 'Admin', visibility: 'PROTECTED' }, { key: admin.key });
  t.equal(byAdmin.status, 201);
  t.equal(byAdmin.body.createdById, admin.organizationUserId);
  const byOutsider = await server.post('/api/v1/study-collections', { name: 'Theirs' }, { key: outsider.key });
  t.equal(byOutsider.body.organizationId, other, 'a collection belongs to the caller key\'s organization');

  t.same(await activity(res.body.id), [
    {
      event_type: 'study_collection.created',
      category: 'RESEARCH',
      data: { collectionId: res.body.id, name: 'Screening', visibility: 'PRIVATE' },
      project_id: null,
      study_id: null,
      organization_user_id: alice.organizationUserId,
    },
  ]);
});

t.test('create and update validate name (required, not blank), visibility (enum) and description', async (t) => {
  const missing = await server.post('/api/v1/study-collections', { description: 'x' }, { key: alice.key });
  t.equal(missing.status, 400);
  t.same(missing.body.errors, [{ field: 'name', message: 'is required' }]);
  const blank = await server.post('/api/v1/study-collections', { name: '   ' }, { key: alice.key });
  t.equal(blank.status, 400);
  t.same(blank.body.errors, [{ field: 'name', message: 'must not be blank' }]);
  const badVisibility = await server.post('/api/v1/study-collections', { name: 'C', visibility: 'SECRET' }, { key: alice.key });
  t.equal(badVisibility.status, 400);
  t.equal(badVisibility.body.errors[0].field, 'visibility');
  const badDescription = await server.post('/api/v1/study-collections', { name: 'C', description: 42 }, { key: alice.key });
  t.equal(badDescription.status, 400);
  t.equal(badDescription.body.errors[0].field, 'description');

  const c = await collection(alice);
  const blankUpdate = await server.put(path(c), { name: '' }, { key: alice.key });
  t.equal(blankUpdate.status, 400);
  t.same(blankUpdate.body.errors, [{ field: 'name', message: 'must not be blank' }]);
  t.equal((await server.put(path(c), { visibility: 'OPEN' }, { key: alice.key })).status, 400);
  t.equal((await server.get('/api/v1/study-collections/not-a-uuid', { key: alice.key })).status, 400);
});

t.test('visibility decides who views: PRIVATE owner and admins, PROTECTED and PUBLIC every org user, never another org', async (t) => {
  const priv = await collection(alice, 'PRIVATE');
  const prot = await collection(alice, 'PROTECTED');
  const pub = await collection(alice, 'PUBLIC');
  const cases: [Collection, Member, number][] = [
    [priv, alice, 200], [priv, bob, 404], [priv, admin, 200], [priv, outsider, 404],
    [prot, alice, 200], [prot, bob, 200], [prot, admin, 200], [prot, outsider, 404],
    [pub, alice, 200], [pub, bob, 200], [pub, admin, 200], [pub, outsider, 404],
  ];
  for (const [c, who, status] of cases) {
    t.equal((await server.get(path(c), { key: who.key })).status, status, `${c.visibility} viewed by ${who === alice ? 'owner' : who === bob ? 'member' : who === admin ? 'admin' : 'other org'}`);
  }
  const hidden = await server.get(path(priv), { key: bob.key });
  t.match(hidden.body, { statusCode: 404, message: `Study collection with id ${priv.id} not found` });
  t.equal((await server.get(`/api/v1/study-collections/${randomUUID()}`, { key: admin.key })).status, 404);

  const ids = async (who: Member) => {
    const res = await server.get('/api/v1/study-collections?size=200', { key: who.key });
    t.equal(res.status, 200);
    const list = res.body.content.map((c: { id: string }) => c.id);
    t.equal(res.body.totalElements, list.length, 'the total counts only visible collections');
    return list;
  };
  const bobs = await ids(bob);
  t.ok(bobs.includes(prot.id) && bobs.includes(pub.id));
  t.notOk(bobs.includes(priv.id));
  t.ok((await ids(admin)).includes(priv.id));
  t.ok((await ids(alice)).includes(priv.id));
  const outsiders = await ids(outsider);
  t.notOk([priv.id, prot.id, pub.id].some((id) => outsiders.includes(id)));
});

t.test('list: page envelope, no studies in items, sort by name', async (t) => {
  // An organization of its own, so other tests' shared collections do not show.
  const carol = await server.member(await server.organization());
  for (const name of ['b', 'c', 'a']) await collection(carol, 'PRIVATE', name);
  const res = await server.get('/api/v1/study-collections?size=2&sort=name,asc', { key: carol.key });
  t.equal(res.status, 200);
  t.match(res.body, { totalElements: 3, totalPages: 2, size: 2, number: 0, first: true, last: false, empty: false });
  t.same(res.body.content.map((c: { name: string }) => c.name), ['a', 'b']);
  t.same(Object.keys(res.body.content[0]).sort(), ['createdAt', 'createdById', 'description', 'id', 'name', 'organizationId', 'studyCount', 'updatedAt', 'version', 'visibility']);
  const next = await server.get('/api/v1/study-collections?size=2&page=1&sort=name,asc', { key: carol.key });
  t.same(next.body.content.map((c: { name: string }) => c.name), ['c']);
  t.equal((await server.get('/api/v1/study-collections?sort=colour,asc', { key: carol.key })).status, 400);
});

t.test('update: owner and admin always; any member on PUBLIC (but not its visibility); 403 on PROTECTED, 404 on PRIVATE', async (t) => {
  const prot = await collection(alice, 'PROTECTED');
  const upd = await server.put(path(prot), { name: 'Renamed', description: 'New' }, { key: alice.key });
  t.equal(upd.status, 200);
  t.match(upd.body, { id: prot.id, name: 'Renamed', description: 'New', visibility: 'PROTECTED', version: prot.version + 1, studies: [] });
  t.equal((await server.put(path(prot), { name: 'x' }, { key: bob.key })).status, 403);
  t.equal((await server.put(path(prot), { name: 'x' }, { key: bob.key })).text, '', '403 has an empty body');
  t.equal((await server.put(path(prot), { name: 'x' }, { key: outsider.key })).status, 404);
  const byAdmin = await server.put(path(prot), { description: null }, { key: admin.key });
  t.equal(byAdmin.status, 200);
  t.equal(byAdmin.body.description, null);

  const priv = await collection(alice, 'PRIVATE');
  t.equal((await server.put(path(priv), { name: 'x' }, { key: bob.key })).status, 404);

  const pub = await collection(alice, 'PUBLIC');
  const byMember = await server.put(path(pub), { name: 'Shared', visibility: 'PUBLIC' }, { key: bob.key });
  t.equal(byMember.status, 200, 'a member edits a PUBLIC collection (sending its visibility unchanged)');
  t.equal(byMember.body.name, 'Shared');
  t.equal((await server.put(path(pub), { visibility: 'PRIVATE' }, { key: bob.key })).status, 403, 'only the owner changes who sees it');

  const stale = await server.put(path(pub), { name: 'Again', version: pub.version }, { key: alice.key });
  t.equal(stale.status, 409, 'a stale version is a conflict');
  const vis = await server.put(path(pub), { visibility: 'PROTECTED', version: byMember.body.version }, { key: alice.key });
  t.equal(vis.status, 200);
  t.equal(vis.body.visibility, 'PROTECTED');
  const unchanged = await server.put(path(pub), { name: 'Shared' }, { key: alice.key });
  t.equal(unchanged.status, 200);
  t.equal(unchanged.body.version, vis.body.version, 'an update that changes nothing keeps the version (and records nothing)');

  const rows = await activity(pub.id);
  t.same(rows.map((r) => [r.event_type, r.category]), [
    ['study_collection.created', 'RESEARCH'],
    ['study_collection.updated', 'RESEARCH'],
    ['study_collection.updated', 'RESEARCH'],
    ['study_collection.visibility_changed', 'GOVERNANCE'],
  ]);
  t.same(rows[1].data, { collectionId: pub.id, fields: ['name'] });
  t.equal(rows[1].organization_user_id, bob.organizationUserId);
  t.same(rows[3].data, { collectionId: pub.id, oldVisibility: 'PUBLIC', newVisibility: 'PROTECTED' });
  const adminVis = await server.put(path(priv), { visibility: 'PUBLIC' }, { key: admin.key });
  t.equal(adminVis.status, 200, 'an admin changes the visibility of any collection');
});

t.test('add and remove studies: the caller changes the collection and views the study; both idempotent', async (t) => {
  const shared = await project(alice, 'PROTECTED');
  const hidden = await project(alice, 'PRIVATE');
  const sA = await study(alice, shared.id);
  const sP = await study(alice, hidden.id);
  const foreign = await study(outsider, (await project(outsider, 'PUBLIC')).id);
  const pub = await collection(alice, 'PUBLIC');

  const added = await server.post(path(pub, sA.id), undefined, { key: bob.key });
  t.equal(added.status, 200, 'a member adds a study they view to a PUBLIC collection');
  t.same(added.body.studies.map((s: { id: string }) => s.id), [sA.id]);
  t.equal(added.body.studyCount, 1);
  t.same(added.body.studies[0], (await server.get(`/api/v1/studies/${sA.id}`, { key: bob.key })).body, 'studies appear as GET /studies/{id} returns them');
  const again = await server.post(path(pub, sA.id), undefined, { key: bob.key });
  t.equal(again.status, 200, 'adding twice is fine');
  t.same(again.body.studies.map((s: { id: string }) => s.id), [sA.id]);
  t.same(await server.sql('select study_id from study_collection_study where collection_id = ?', [pub.id]), [{ study_id: sA.id }], 'one row');

  const notViewable = await server.post(path(pub, sP.id), undefined, { key: bob.key });
  t.equal(notViewable.status, 404);
  t.equal(notViewable.body.message, `Study with id ${sP.id} not found`, 'the 404 names the study');
  t.equal((await server.post(path(pub, foreign.id), undefined, { key: alice.key })).status, 404, 'a study of another organization');
  t.equal((await server.post(path(pub, randomUUID()), undefined, { key: alice.key })).status, 404);
  t.equal((await server.post(path(pub, sA.id), undefined, { key: outsider.key })).status, 404, 'the collection of another organization');

  t.equal((await server.post(path(pub, sP.id), undefined, { key: alice.key })).status, 200, 'the owner adds a study only she may view');
  const asBob = await server.get(path(pub), { key: bob.key });
  t.same(asBob.body.studies.map((s: { id: string }) => s.id), [sA.id], 'studies the caller may not view are left out');
  t.equal(asBob.body.studyCount, 1);
  const asAlice = await server.get(path(pub), { key: alice.key });
  t.same(asAlice.body.studies.map((s: { id: string }) => s.id).sort(), [sA.id, sP.id].sort());
  t.equal(asAlice.body.studyCount, 2);
  const listed = await server.get('/api/v1/study-collections?size=200', { key: bob.key });
  t.equal(listed.body.content.find((c: { id: string }) => c.id === pub.id).studyCount, 1, 'list counts only viewable studies too');
  t.equal((await server.get(path(pub), { key: admin.key })).body.studyCount, 2);

  const prot = await collection(alice, 'PROTECTED');
  t.equal((await server.post(path(prot, sA.id), undefined, { key: bob.key })).status, 403, 'a viewer of a PROTECTED collection');
  t.equal((await server.delete(path(prot, sA.id), { key: bob.key })).status, 403);
  const priv = await collection(alice, 'PRIVATE');
  t.equal((await server.post(path(priv, sA.id), undefined, { key: bob.key })).status, 404, 'a PRIVATE collection of someone else');
  t.equal((await server.post(path(priv, sA.id), undefined, { key: admin.key })).status, 200, 'an admin changes any collection');

  t.equal((await server.delete(path(pub, sP.id), { key: bob.key })).status, 404, 'removing a study the caller cannot view');
  const removed = await server.delete(path(pub, sA.id), { key: bob.key });
  t.equal(removed.status, 204);
  t.equal(removed.text, '');
  t.equal((await server.delete(path(pub, sA.id), { key: bob.key })).status, 204, 'removing a study not in it is fine');
  t.same((await server.get(path(pub), { key: alice.key })).body.studies.map((s: { id: string }) => s.id), [sP.id]);
  t.equal((await server.delete(path(pub, sP.id), { key: outsider.key })).status, 404);

  const rows = (await activity(pub.id)).filter((r) => r.event_type.startsWith('study_collection.study_'));
  t.same(rows, [
    { event_type: 'study_collection.study_added', category: 'RESEARCH', data: { collectionId: pub.id, studyId: sA.id, projectId: shared.id }, project_id: shared.id, study_id: sA.id, organization_user_id: bob.organizationUserId },
    { event_type: 'study_collection.study_added', category: 'RESEARCH', data: { collectionId: pub.id, studyId: sP.id, projectId: hidden.id }, project_id: hidden.id, study_id: sP.id, organization_user_id: alice.organizationUserId },
    { event_type: 'study_collection.study_removed', category: 'RESEARCH', data: { collectionId: pub.id, studyId: sA.id, projectId: shared.id }, project_id: shared.id, study_id: sA.id, organization_user_id: bob.organizationUserId },
  ], 'one record per actual change: repeated adds and removes record nothing');
});

t.test('delete: owner or admin (403 for other viewers, 404 when not viewable); studies stay', async (t) => {
  const s = await study(alice, (await project(alice, 'PUBLIC')).id);
  const pub = await collection(alice, 'PUBLIC');
  await server.post(path(pub, s.id), undefined, { key: alice.key });
  t.equal((await server.delete(path(pub), { key: bob.key })).status, 403);
  t.equal((await server.delete(path(pub), { key: outsider.key })).status, 404);
  const del = await server.delete(path(pub), { key: alice.key });
  t.equal(del.status, 204);
  t.equal(del.text, '');
  t.equal((await server.get(path(pub), { key: alice.key })).status, 404);
  t.equal((await server.delete(path(pub), { key: alice.key })).status, 404);
  t.same(await server.sql('select * from study_collection_study where collection_id = ?', [pub.id]), []);
  t.equal((await server.get(`/api/v1/studies/${s.id}`, { key: alice.key })).status, 200, 'the study stays');
  const rows = await activity(pub.id);
  t.same(rows.at(-1), { event_type: 'study_collection.deleted', category: 'RESEARCH', data: { collectionId: pub.id, name: 'Collection' }, project_id: null, study_id: null, organization_user_id: alice.organizationUserId });

  const priv = await collection(alice, 'PRIVATE');
  t.equal((await server.delete(path(priv), { key: bob.key })).status, 404);
  t.equal((await server.delete(path(priv), { key: admin.key })).status, 204, 'an admin deletes any collection');
});

t.test('deleting a study, or its project, takes it out of every collection', async (t) => {
  const p = await project(alice, 'PUBLIC');
  const s1 = await study(alice, p.id);
  const s2 = await study(alice, p.id);
  const c1 = await collection(alice, 'PUBLIC');
  const c2 = await collection(bob, 'PRIVATE');
  for (const [c, who] of [[c1, alice], [c2, bob]] as const) {
    for (const s of [s1, s2]) t.equal((await server.post(path(c, s.id), undefined, { key: who.key })).status, 200);
  }
  t.equal((await server.delete(`/api/v1/studies/${s1.id}`, { key: alice.key })).status, 204);
  t.same((await server.get(path(c1), { key: alice.key })).body.studies.map((s: { id: string }) => s.id), [s2.id]);
  t.equal((await server.get(path(c2), { key: bob.key })).body.studyCount, 1);
  t.equal((await server.delete(`/api/v1/projects/${p.id}`, { key: alice.key })).status, 204);
  t.same(await server.sql('select * from study_collection_study where collection_id in (?, ?)', [c1.id, c2.id]), []);
  t.same((await server.get(path(c2), { key: bob.key })).body.studies, []);
});

t.test('tools list_study_collections and get_study_collection return the REST GET bodies; hidden ones are not-found results', async (t) => {
  const s = await study(alice, (await project(alice, 'PROTECTED')).id);
  const pub = await collection(alice, 'PUBLIC');
  await server.post(path(pub, s.id), undefined, { key: alice.key });
  await collection(alice, 'PROTECTED');
  const priv = await collection(alice, 'PRIVATE');
  const client = await connectMcp(server.url, { key: bob.key, teardown: (fn) => t.teardown(fn) });
  await expectToolMatchesRest(t, server, client, bob.key, 'list_study_collections', {}, '/study-collections');
  await expectToolMatchesRest(t, server, client, bob.key, 'list_study_collections', { page: 1, size: 2 }, '/study-collections?page=1&size=2');
  await expectToolMatchesRest(t, server, client, bob.key, 'get_study_collection', { id: pub.id }, `/study-collections/${pub.id}`);
  const foreign = await collection(outsider, 'PUBLIC');
  for (const id of [priv.id, foreign.id, randomUUID()]) {
    const result = await callTool(client, 'get_study_collection', { id });
    t.equal(result.isError, true);
    t.equal(resultText(result), `Study collection with id ${id} not found`);
  }
});
