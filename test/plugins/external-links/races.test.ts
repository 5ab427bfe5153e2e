// Link writes sent truly at once (parallel HTTPS requests on a real PostgreSQL) with deletes and
// moves of their parent and with each other end in a state one serial order of them gives.
import t, { type Test } from 'tap';
import { createProject, createStudy, startTestServer, testCast, type Response } from '../../support/server.ts';

const server = await startTestServer(t, { plugins: ['users', 'projects', 'studies', 'external-links'] });
const { alice } = await testCast(server);
const k = { key: alice.key };
const TRIES = 10;

const links = (studyId: string) => `/api/v1/studies/${studyId}/external-links`;
async function link(studyId: string): Promise<{ id: string; version: number }> {
  const res = await server.post(links(studyId), { label: 'Docs', url: 'https://example.org/docs' }, k);
  if (res.status !== 201) throw new Error(`link create failed: ${res.status} ${res.text}`);
  return res.body;
}
const entries = (eventType: string, where: string, id: string) =>
  server.sql<{ project_id: string }>(`select project_id from activity where event_type = ? and ${where} = ?`, [eventType, id]);

function statuses(t: Test, responses: Response[], allowed: number[][]) {
  responses.forEach((res, i) => t.ok(allowed[i].includes(res.status), `status ${res.status} is one of ${allowed[i].join(', ')}`, { body: res.text }));
}

t.test('a link added to a study while the study is deleted: no link outlives its study', async (t) => {
  const p = await createProject(server, alice);
  for (let i = 0; i < TRIES; i++) {
    const s = (await createStudy(server, alice, p.id)).id;
    const [create, del] = await Promise.all([server.post(links(s), { label: 'Docs', url: 'https://example.org/docs' }, k), server.delete(`/api/v1/studies/${s}`, k)]);
    statuses(t, [create, del], [[201, 404], [204]]);
    t.same(await server.sql('select id from external_link where parent_id = ?', [s]), [], 'the delete took every link along');
  }
});

t.test('a link added to a study while it moves: the created entry follows the study', async (t) => {
  const [from, to] = [await createProject(server, alice), await createProject(server, alice)];
  for (let i = 0; i < TRIES; i++) {
    const s = (await createStudy(server, alice, from.id)).id;
    const [create, move] = await Promise.all([
      server.post(links(s), { label: 'Docs', url: 'https://example.org/docs' }, k),
      server.request('PATCH', `/api/v1/studies/${s}/move`, { ...k, body: { projectId: to.id } }),
    ]);
    statuses(t, [create, move], [[201], [200]]);
    t.same(await entries('external_link.created', 'study_id', s), [{ project_id: to.id }], 'recorded on the project the study is in');
  }
});

t.test('one link deleted twice at once: one 204, one 404, one deleted entry', async (t) => {
  const s = (await createStudy(server, alice, (await createProject(server, alice)).id)).id;
  for (let i = 0; i < TRIES; i++) {
    const l = await link(s);
    const deletes = await Promise.all([1, 2].map(() => server.delete(`${links(s)}/${l.id}`, k)));
    t.same(deletes.map((r) => r.status).sort(), [204, 404], deletes.map((r) => r.text).join(' '));
    t.equal((await server.sql(`select 1 from activity where event_type = 'external_link.deleted' and data->>'linkId' = ?`, [l.id])).length, 1);
  }
});

t.test('concurrent PUTs without a version both apply; an update racing a delete finds the link or nothing', async (t) => {
  const s = (await createStudy(server, alice, (await createProject(server, alice)).id)).id;
  for (let i = 0; i < TRIES; i++) {
    const l = await link(s);
    const path = `${links(s)}/${l.id}`;
    const [a, b] = await Promise.all([server.put(path, { label: 'Renamed' }, k), server.put(path, { url: 'https://example.org/moved' }, k)]);
    statuses(t, [a, b], [[200], [200]]);
    const [row] = await server.sql('select label, url, version from external_link where id = ?', [l.id]);
    t.same(row, { label: 'Renamed', url: 'https://example.org/moved', version: l.version + 2 }, 'both changes, each on the other');

    const [update, del] = await Promise.all([server.put(path, { label: 'Late' }, k), server.delete(path, k)]);
    statuses(t, [update, del], [[200, 404], [204]]);
    const updated = await server.sql(`select 1 from activity where event_type = 'external_link.updated' and data->>'linkId' = ? and data->>'label' = 'Late'`, [l.id]);
    t.equal(updated.length, update.status === 200 ? 1 : 0, 'an update entry only for an update that happened');
  }
});
