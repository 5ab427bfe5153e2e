import t from 'tap';
import { randomUUID } from 'node:crypto';
import { createProject, createStudy, startTestServer, testCast, type Member } from '../../support/server.ts';
import { callTool, connectMcp, expectToolMatchesRest, resultText } from '../../support/mcp.ts';

const server = await startTestServer(t, { plugins: ['users', 'projects', 'studies', 'study-relationships'] });
const { org, admin, alice, bob, outsider } = await testCast(server);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const INVERSES = [
  ['IS_PARENT_OF', 'IS_CHILD_OF'],
  ['IS_CHILD_OF', 'IS_PARENT_OF'],
  ['IS_BLOCKING', 'IS_BLOCKED_BY'],
  ['IS_BLOCKED_BY', 'IS_BLOCKING'],
  ['IS_PRECEDED_BY', 'IS_SUCCEEDED_BY'],
  ['IS_SUCCEEDED_BY', 'IS_PRECEDED_BY'],
  ['IS_RELATED_TO', 'IS_RELATED_TO'],
];

interface Relationship {
  id: string;
  type: string;
  sourceStudyId: string;
  targetStudyId: string;
}

const project = (owner: Member, visibility?: string) => createProject(server, owner, visibility);
const study = (owner: Member, projectId: string) => createStudy(server, owner, projectId);
const rels = (studyId: string) => `/api/v1/studies/${studyId}/relationships`;
async function relate(who: Member, sourceId: string, type: string, targetStudyId: string): Promise<Relationship> {
  const res = await server.post(rels(sourceId), { type, targetStudyId }, { key: who.key });
  if (res.status !== 201) throw new Error(`relationship create failed: ${res.status} ${res.text}`);
  return res.body;
}
async function listed(who: Member, studyId: string): Promise<Relationship[]> {
  const res = await server.get(rels(studyId) + '?size=200', { key: who.key });
  if (res.status !== 200) throw new Error(`list failed: ${res.status} ${res.text}`);
  return res.body.content;
}

t.test('create: 201 with the relationship, the inverse appears on the target, activity on the source study', async (t) => {
  const p = await project(alice, 'PROTECTED');
  const a = await study(alice, p.id);
  const b = await study(alice, p.id);
  const res = await server.post(rels(a.id), { type: 'IS_PARENT_OF', targetStudyId: b.id }, { key: alice.key });
  t.equal(res.status, 201);
  t.same(Object.keys(res.body).sort(), ['createdAt', 'createdById', 'id', 'organizationId', 'sourceStudyId', 'targetStudyId', 'type']);
  t.match(res.body, { id: UUID, organizationId: org, type: 'IS_PARENT_OF', sourceStudyId: a.id, targetStudyId: b.id, createdById: alice.organizationUserId });
  t.equal(new Date(res.body.createdAt).toISOString(), res.body.createdAt, 'createdAt is ISO 8601 UTC');
  t.same(await listed(alice, a.id), [res.body], 'the source lists it');
  const inverse = await listed(alice, b.id);
  t.equal(inverse.length, 1);
  t.match(inverse[0], { type: 'IS_CHILD_OF', sourceStudyId: b.id, targetStudyId: a.id });
  t.not(inverse[0].id, res.body.id);

  const rows = await server.sql<Record<string, unknown>>(
    `select event_type, category, data, project_id, study_id, organization_user_id from activity where event_type like 'study_relationship.%' and study_id in (?, ?)`,
    [a.id, b.id],
  );
  t.same(rows, [
    { event_type: 'study_relationship.created', category: 'RESEARCH', data: { type: 'IS_PARENT_OF', targetStudyId: b.id }, project_id: p.id, study_id: a.id, organization_user_id: alice.organizationUserId },
  ]);
});

t.test('every type gets its inverse on the target', async (t) => {
  const p = await project(alice, 'PUBLIC');
  for (const [type, inverse] of INVERSES) {
    const a = await study(alice, p.id);
    const b = await study(alice, p.id);
    await relate(alice, a.id, type, b.id);
    t.same((await listed(alice, b.id)).map((r) => [r.type, r.targetStudyId]), [[inverse, a.id]], `${type} ↔ ${inverse}`);
  }
});

t.test('validation: type enum and targetStudyId required, a relationship to itself is a 400', async (t) => {
  const p = await project(alice, 'PUBLIC');
  const a = await study(alice, p.id);
  const b = await study(alice, p.id);
  const self = await server.post(rels(a.id), { type: 'IS_RELATED_TO', targetStudyId: a.id }, { key: alice.key });
  t.equal(self.status, 400);
  t.match(self.body, { statusCode: 400, errors: [{ field: 'targetStudyId' }] });
  const missingType = await server.post(rels(a.id), { targetStudyId: b.id }, { key: alice.key });
  t.equal(missingType.status, 400);
  t.same(missingType.body.errors, [{ field: 'type', message: 'is required' }]);
  const badType = await server.post(rels(a.id), { type: 'IS_COUSIN_OF', targetStudyId: b.id }, { key: alice.key });
  t.equal(badType.status, 400);
  t.equal(badType.body.errors[0].field, 'type');
  const missingTarget = await server.post(rels(a.id), { type: 'IS_RELATED_TO' }, { key: alice.key });
  t.equal(missingTarget.status, 400);
  t.same(missingTarget.body.errors, [{ field: 'targetStudyId', message: 'is required' }]);
  const badTarget = await server.post(rels(a.id), { type: 'IS_RELATED_TO', targetStudyId: 'b' }, { key: alice.key });
  t.equal(badTarget.status, 400);
  t.same(badTarget.body.errors, [{ field: 'targetStudyId', message: 'must be a UUID' }]);
  t.same(await listed(alice, a.id), [], 'nothing was created');
});

t.test('the same relationship twice is a 409, from either end and under concurrency', async (t) => {
  const p = await project(alice, 'PUBLIC');
  const a = await study(alice, p.id);
  const b = await study(alice, p.id);
  await relate(alice, a.id, 'IS_BLOCKING', b.id);
  const twice = await server.post(rels(a.id), { type: 'IS_BLOCKING', targetStudyId: b.id }, { key: alice.key });
  t.equal(twice.status, 409);
  t.equal(twice.body.statusCode, 409);
  const inverse = await server.post(rels(b.id), { type: 'IS_BLOCKED_BY', targetStudyId: a.id }, { key: alice.key });
  t.equal(inverse.status, 409, 'the inverse already exists');
  t.equal((await server.post(rels(a.id), { type: 'IS_RELATED_TO', targetStudyId: b.id }, { key: alice.key })).status, 201, 'another type is another relationship');

  const c = await study(alice, p.id);
  const d = await study(alice, p.id);
  const racing = await Promise.all([
    server.post(rels(c.id), { type: 'IS_PRECEDED_BY', targetStudyId: d.id }, { key: alice.key }),
    server.post(rels(d.id), { type: 'IS_SUCCEEDED_BY', targetStudyId: c.id }, { key: alice.key }),
    server.post(rels(c.id), { type: 'IS_PRECEDED_BY', targetStudyId: d.id }, { key: alice.key }),
    server.post(rels(d.id), { type: 'IS_SUCCEEDED_BY', targetStudyId: c.id }, { key: alice.key }),
  ]);
  t.same(racing.map((r) => r.status).sort(), [201, 409, 409, 409], 'exactly one of the racing requests wins');
  const rows = await server.sql('select type from study_relationship where source_study_id in (?, ?)', [c.id, d.id]);
  t.equal(rows.length, 2, 'one pair');
});

t.test('create permissions: contributor on the source (403 viewer, 404 hidden/other org, admin ok); target viewable and of the same org', async (t) => {
  const prot = await project(alice, 'PROTECTED');
  const priv = await project(alice, 'PRIVATE');
  const pub = await project(alice, 'PUBLIC');
  const sProt = await study(alice, prot.id);
  const sPriv = await study(alice, priv.id);
  const sPub = await study(alice, pub.id);
  const foreign = await study(outsider, (await project(outsider, 'PUBLIC')).id);

  const viewer = await server.post(rels(sProt.id), { type: 'IS_RELATED_TO', targetStudyId: sPub.id }, { key: bob.key });
  t.equal(viewer.status, 403, 'bob views the PROTECTED source but does not contribute');
  t.equal(viewer.text, '');
  const hiddenSource = await server.post(rels(sPriv.id), { type: 'IS_RELATED_TO', targetStudyId: sPub.id }, { key: bob.key });
  t.equal(hiddenSource.status, 404);
  t.equal(hiddenSource.body.message, `Study with id ${sPriv.id} not found`);
  t.equal((await server.post(rels(sPub.id), { type: 'IS_RELATED_TO', targetStudyId: sProt.id }, { key: outsider.key })).status, 404, 'another organization');
  const nonMember = await server.post(rels(sPub.id), { type: 'IS_RELATED_TO', targetStudyId: sProt.id }, { key: bob.key });
  t.equal(nonMember.status, 403, 'bob views the PUBLIC source but, not a member, does not contribute');
  await server.grant(pub.id, bob);
  const hiddenTarget = await server.post(rels(sPub.id), { type: 'IS_RELATED_TO', targetStudyId: sPriv.id }, { key: bob.key });
  t.equal(hiddenTarget.status, 404, 'bob contributes to the PUBLIC source but cannot view the target');
  t.equal(hiddenTarget.body.message, `Study with id ${sPriv.id} not found`, 'the 404 names the target study');
  const foreignTarget = await server.post(rels(sPub.id), { type: 'IS_RELATED_TO', targetStudyId: foreign.id }, { key: alice.key });
  t.equal(foreignTarget.status, 404, 'a target in another organization');
  t.equal(foreignTarget.body.message, `Study with id ${foreign.id} not found`);
  t.equal((await server.post(rels(sPub.id), { type: 'IS_RELATED_TO', targetStudyId: randomUUID() }, { key: alice.key })).status, 404);

  t.equal((await server.post(rels(sPub.id), { type: 'IS_RELATED_TO', targetStudyId: sProt.id }, { key: bob.key })).status, 201, 'member (contributor) ok');
  t.equal((await server.post(rels(sPriv.id), { type: 'IS_PARENT_OF', targetStudyId: sProt.id }, { key: admin.key })).status, 201, 'admin ok');
  t.equal((await server.post(rels(sPriv.id), { type: 'IS_BLOCKING', targetStudyId: sPub.id }, { key: alice.key })).status, 201, 'project member ok');
});

t.test('list: relationships originating from the study, only to targets the caller may view; the source must be viewable', async (t) => {
  const pub = await project(alice, 'PUBLIC');
  const priv = await project(alice, 'PRIVATE');
  const s = await study(alice, pub.id);
  const visible = await study(alice, pub.id);
  const hidden = await study(alice, priv.id);
  const r1 = await relate(alice, s.id, 'IS_RELATED_TO', visible.id);
  const r2 = await relate(alice, s.id, 'IS_PRECEDED_BY', hidden.id);
  await relate(alice, visible.id, 'IS_BLOCKING', hidden.id);

  const asAlice = await server.get(rels(s.id), { key: alice.key });
  t.equal(asAlice.status, 200);
  t.match(asAlice.body, { totalElements: 2, totalPages: 1, size: 20, number: 0, first: true, last: true, empty: false });
  t.same(asAlice.body.content.map((r: Relationship) => r.id), [r2.id, r1.id], 'newest first, only those originating here');
  const asBob = await server.get(rels(s.id), { key: bob.key });
  t.same(asBob.body.content.map((r: Relationship) => r.id), [r1.id], 'the one to a study bob cannot view is left out');
  t.equal(asBob.body.totalElements, 1, 'and the total is exact');
  t.same((await listed(admin, s.id)).map((r) => r.id).sort(), [r1.id, r2.id].sort());
  const sorted = await server.get(rels(s.id) + '?sort=type,asc&size=1', { key: alice.key });
  t.match(sorted.body, { totalElements: 2, totalPages: 2 });
  t.same(sorted.body.content.map((r: Relationship) => r.type), ['IS_PRECEDED_BY']);
  t.equal((await server.get(rels(s.id) + '?sort=target,asc', { key: alice.key })).status, 400);

  t.equal((await server.get(rels(hidden.id), { key: bob.key })).status, 404, 'a study bob cannot view');
  t.equal((await server.get(rels(s.id), { key: outsider.key })).status, 404, 'another organization');
  t.equal((await server.get(rels(randomUUID()), { key: alice.key })).status, 404);
  t.equal((await server.get(rels(hidden.id), { key: alice.key })).body.totalElements, 2, 'member of the private project');
});

t.test('delete removes both sides; 404 for a relationship of another study; contributors only', async (t) => {
  const prot = await project(alice, 'PROTECTED');
  const a = await study(alice, prot.id);
  const b = await study(alice, prot.id);
  const r = await relate(alice, a.id, 'IS_PARENT_OF', b.id);
  const [inverse] = await listed(alice, b.id);
  t.equal((await server.delete(`${rels(a.id)}/${inverse.id}`, { key: alice.key })).status, 404, 'the inverse does not originate from a');
  t.equal((await server.delete(`${rels(a.id)}/${randomUUID()}`, { key: alice.key })).status, 404);
  const wrong = await server.delete(`${rels(a.id)}/${inverse.id}`, { key: alice.key });
  t.equal(wrong.body.message, `Study relationship with id ${inverse.id} not found`);
  t.equal((await server.delete(`${rels(a.id)}/${r.id}`, { key: bob.key })).status, 403, 'a viewer of the PROTECTED project');
  t.equal((await server.delete(`${rels(a.id)}/${r.id}`, { key: outsider.key })).status, 404);
  // A relationship has no GET, so no entity tag: a listed tag cannot match (RFC 9110), `*` can.
  const tagged = await server.delete(`${rels(a.id)}/${r.id}`, { key: alice.key, headers: { 'if-match': '"some-tag"' } });
  t.equal(tagged.status, 412, 'If-Match with a tag is a failed precondition');
  t.equal(tagged.body.statusCode, 412, 'with the envelope');
  t.equal((await listed(alice, a.id)).length, 1, 'and nothing was deleted');
  const del = await server.delete(`${rels(a.id)}/${r.id}`, { key: alice.key, headers: { 'if-match': '*' } });
  t.equal(del.status, 204);
  t.equal(del.text, '');
  t.same(await listed(alice, a.id), []);
  t.same(await listed(alice, b.id), [], 'the inverse is gone too');
  t.equal((await server.delete(`${rels(a.id)}/${r.id}`, { key: alice.key })).status, 404);
  const rows = await server.sql<Record<string, unknown>>(
    `select category, data, project_id, study_id from activity where event_type = 'study_relationship.deleted' and study_id = ?`,
    [a.id],
  );
  t.same(rows, [{ category: 'RESEARCH', data: { type: 'IS_PARENT_OF', targetStudyId: b.id }, project_id: prot.id, study_id: a.id }]);

  const priv = await project(alice, 'PRIVATE');
  const hiddenSource = await study(alice, priv.id);
  const hiddenRel = await relate(alice, hiddenSource.id, 'IS_RELATED_TO', a.id);
  t.equal((await server.delete(`${rels(hiddenSource.id)}/${hiddenRel.id}`, { key: bob.key })).status, 404, 'a study bob cannot view');

  // Deleting from the other end removes the original too; an admin may.
  const r2 = await relate(alice, a.id, 'IS_BLOCKING', b.id);
  const [back] = await listed(alice, b.id);
  t.equal((await server.delete(`${rels(b.id)}/${back.id}`, { key: admin.key })).status, 204);
  t.same(await server.sql('select id from study_relationship where id in (?, ?)', [r2.id, back.id]), []);
});

t.test('deleting a study, or its project, removes its relationships on both sides', async (t) => {
  const p1 = await project(alice, 'PUBLIC');
  const p2 = await project(alice, 'PUBLIC');
  const a = await study(alice, p1.id);
  const b = await study(alice, p2.id);
  const c = await study(alice, p2.id);
  await relate(alice, a.id, 'IS_RELATED_TO', b.id);
  await relate(alice, c.id, 'IS_PARENT_OF', a.id);
  await relate(alice, b.id, 'IS_BLOCKING', c.id);
  t.equal((await server.delete(`/api/v1/studies/${a.id}`, { key: alice.key })).status, 204);
  t.same(await server.sql('select id from study_relationship where source_study_id = ? or target_study_id = ?', [a.id, a.id]), []);
  t.same((await listed(alice, b.id)).map((r) => r.targetStudyId), [c.id], 'other relationships stay');
  t.equal((await server.delete(`/api/v1/projects/${p2.id}`, { key: alice.key })).status, 204);
  t.same(await server.sql('select id from study_relationship where source_study_id in (?, ?) or target_study_id in (?, ?)', [b.id, c.id, b.id, c.id]), []);
});

t.test('tool list_study_relationships returns the REST GET body; a hidden study is a not-found result', async (t) => {
  const pub = await project(alice, 'PUBLIC');
  const s = await study(alice, pub.id);
  for (const type of ['IS_RELATED_TO', 'IS_PARENT_OF', 'IS_BLOCKING']) await relate(alice, s.id, type, (await study(alice, pub.id)).id);
  const client = await connectMcp(server.url, { key: bob.key, teardown: (fn) => t.teardown(fn) });
  await expectToolMatchesRest(t, server, client, bob.key, 'list_study_relationships', { studyId: s.id }, `/studies/${s.id}/relationships`);
  await expectToolMatchesRest(t, server, client, bob.key, 'list_study_relationships', { studyId: s.id, page: 1, size: 2 }, `/studies/${s.id}/relationships?page=1&size=2`);
  const hidden = await study(alice, (await project(alice, 'PRIVATE')).id);
  const foreign = await study(outsider, (await project(outsider, 'PUBLIC')).id);
  for (const id of [hidden.id, foreign.id]) {
    const result = await callTool(client, 'list_study_relationships', { studyId: id });
    t.equal(result.isError, true);
    t.equal(resultText(result), `Study with id ${id} not found`);
  }
});
