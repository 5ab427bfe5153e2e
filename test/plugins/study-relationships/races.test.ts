// Relationship writes sent truly at once (parallel HTTPS requests on a real PostgreSQL) with
// study deletes and moves and with each other end in a state one serial order of them gives.
import t, { type Test } from 'tap';
import { createProject, createStudy, startTestServer, testCast, type Response } from '../../support/server.ts';

const server = await startTestServer(t, { plugins: ['users', 'projects', 'studies', 'study-relationships'] });
const { alice } = await testCast(server);
const k = { key: alice.key };
const TRIES = 10;

const rels = (studyId: string) => `/api/v1/studies/${studyId}/relationships`;
const rows = (studyId: string) =>
  server.sql<{ source_study_id: string; type: string; target_study_id: string }>(
    'select source_study_id, type, target_study_id from study_relationship where ? in (source_study_id, target_study_id) order by type',
    [studyId],
  );
const entries = (studyId: string, eventType: string) =>
  server.sql<{ project_id: string }>('select project_id from activity where study_id = ? and event_type = ?', [studyId, eventType]);

function statuses(t: Test, responses: Response[], allowed: number[][]) {
  responses.forEach((res, i) => t.ok(allowed[i].includes(res.status), `status ${res.status} is one of ${allowed[i].join(', ')}`, { body: res.text }));
}

t.test('relating two studies while the target is deleted: the delete succeeds, no relationship is left to it', async (t) => {
  const p = await createProject(server, alice);
  const a = (await createStudy(server, alice, p.id)).id;
  for (let i = 0; i < TRIES; i++) {
    const b = (await createStudy(server, alice, p.id)).id;
    const [create, del] = await Promise.all([server.post(rels(a), { type: 'IS_PARENT_OF', targetStudyId: b }, k), server.delete(`/api/v1/studies/${b}`, k)]);
    statuses(t, [create, del], [[201, 404], [204]]);
    t.same(await rows(b), [], 'no relationship to a deleted study');
    // Serial orders: create then delete (one created entry), or delete then create (404, none).
    const created = await server.sql(`select 1 from activity where event_type = 'study_relationship.created' and data->>'targetStudyId' = ?`, [b]);
    t.equal(created.length, create.status === 201 ? 1 : 0, 'recorded only when created');
  }
});

t.test('one relationship deleted from both ends at once: one 204, one 404, one deleted entry', async (t) => {
  const p = await createProject(server, alice);
  for (let i = 0; i < TRIES; i++) {
    const [a, b] = [(await createStudy(server, alice, p.id)).id, (await createStudy(server, alice, p.id)).id];
    const created = await server.post(rels(a), { type: 'IS_BLOCKING', targetStudyId: b }, k);
    const inverse = (await server.get(rels(b), k)).body.content[0];
    const deletes = await Promise.all([server.delete(`${rels(a)}/${created.body.id}`, k), server.delete(`${rels(b)}/${inverse.id}`, k)]);
    t.same(deletes.map((r) => r.status).sort(), [204, 404], 'the pair goes once');
    t.same(await rows(a), [], 'both rows are gone');
    const recorded = (await entries(a, 'study_relationship.deleted')).length + (await entries(b, 'study_relationship.deleted')).length;
    t.equal(recorded, 1, 'one deleted entry: the second delete changed nothing');
  }
});

t.test('the same relationship created from both ends at once: one 201, one 409, one pair', async (t) => {
  const p = await createProject(server, alice);
  for (let i = 0; i < TRIES; i++) {
    const [a, b] = [(await createStudy(server, alice, p.id)).id, (await createStudy(server, alice, p.id)).id];
    const creates = await Promise.all([
      server.post(rels(a), { type: 'IS_PARENT_OF', targetStudyId: b }, k),
      server.post(rels(b), { type: 'IS_CHILD_OF', targetStudyId: a }, k),
    ]);
    t.same(creates.map((r) => r.status).sort(), [201, 409], creates.map((r) => r.text).join(' '));
    t.same(await rows(a), [
      { source_study_id: b, type: 'IS_CHILD_OF', target_study_id: a },
      { source_study_id: a, type: 'IS_PARENT_OF', target_study_id: b },
    ]);
  }
});

t.test('a relationship created while its source study moves: the created entry follows the study', async (t) => {
  const [from, to] = [await createProject(server, alice), await createProject(server, alice)];
  const b = (await createStudy(server, alice, from.id)).id;
  for (let i = 0; i < TRIES; i++) {
    const a = (await createStudy(server, alice, from.id)).id;
    const [create, move] = await Promise.all([
      server.post(rels(a), { type: 'IS_RELATED_TO', targetStudyId: b }, k),
      server.request('PATCH', `/api/v1/studies/${a}/move`, { ...k, body: { projectId: to.id } }),
    ]);
    statuses(t, [create, move], [[201], [200]]);
    t.same(await entries(a, 'study_relationship.created'), [{ project_id: to.id }], 'recorded on the project the study is in');
  }
});
