// Assay type writes sent truly at once (parallel HTTPS requests on a real PostgreSQL) end in a
// state one serial order of them gives: each write sees the one before it, names stay unique.
import t, { type Test } from 'tap';
import { startTestServer, type Response } from '../../support/server.ts';

const server = await startTestServer(t, { plugins: ['users', 'assay-types'] });
const admin = await server.admin(await server.organization());
const k = { key: admin.key };
const TRIES = 10;

let counter = 0;
async function assayType(status = 'ACTIVE'): Promise<{ id: string; name: string; version: number }> {
  const res = await server.post('/api/v1/assay-types', { name: `Race ${++counter}`, status }, k);
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.text}`);
  return res.body;
}
const entries = (id: string, eventType: string) =>
  server.sql<{ data: Record<string, unknown> }>(`select data from activity where event_type = ? and data->>'assayTypeId' = ? order by date`, [eventType, id]);

function statuses(t: Test, responses: Response[], allowed: number[][]) {
  responses.forEach((res, i) => t.ok(allowed[i].includes(res.status), `status ${res.status} is one of ${allowed[i].join(', ')}`, { body: res.text }));
}

t.test('two status changes at once: both apply, one after the other, and the entries chain', async (t) => {
  for (let i = 0; i < TRIES; i++) {
    const type = await assayType();
    const path = `/api/v1/assay-types/${type.id}/status`;
    const [inactive, archived] = await Promise.all([server.post(path, { status: 'INACTIVE' }, k), server.post(path, { status: 'ARCHIVED' }, k)]);
    statuses(t, [inactive, archived], [[200], [200]]);
    const [{ status: last }] = await server.sql<{ status: string }>('select status from assay_type where id = ?', [type.id]);
    // The second change starts from the first one's status (entries may share a millisecond: ordered by their chain).
    const changes = (await entries(type.id, 'assay_type.status_changed')).map((e) => e.data).sort((a, b) => Number(b.oldStatus === 'ACTIVE') - Number(a.oldStatus === 'ACTIVE'));
    t.same(changes, last === 'ARCHIVED'
      ? [{ assayTypeId: type.id, oldStatus: 'ACTIVE', newStatus: 'INACTIVE' }, { assayTypeId: type.id, oldStatus: 'INACTIVE', newStatus: 'ARCHIVED' }]
      : [{ assayTypeId: type.id, oldStatus: 'ACTIVE', newStatus: 'ARCHIVED' }, { assayTypeId: type.id, oldStatus: 'ARCHIVED', newStatus: 'INACTIVE' }]);
  }
});

t.test('concurrent PUTs without a version both apply', async (t) => {
  for (let i = 0; i < TRIES; i++) {
    const type = await assayType();
    const path = `/api/v1/assay-types/${type.id}`;
    const fields = [{ name: 'od', displayName: 'OD', type: 'NUMBER' }];
    const [a, b] = await Promise.all([server.put(path, { description: 'Described' }, k), server.put(path, { fields }, k)]);
    statuses(t, [a, b], [[200], [200]]);
    const [row] = await server.sql<Record<string, any>>('select description, fields, version from assay_type where id = ?', [type.id]);
    t.match(row, { description: 'Described', fields: [{ name: 'od' }], version: type.version + 2 }, 'both changes, each on the other');
  }
});

t.test('one type deleted twice at once: one 204, one 404, one deleted entry; an update racing the delete finds it or nothing', async (t) => {
  for (let i = 0; i < TRIES; i++) {
    const type = await assayType();
    const path = `/api/v1/assay-types/${type.id}`;
    const [update, ...deletes] = await Promise.all([server.put(path, { description: 'Late' }, k), server.delete(path, k), server.delete(path, k)]);
    t.same(deletes.map((r) => r.status).sort(), [204, 404], deletes.map((r) => r.text).join(' '));
    statuses(t, [update], [[200, 404]]);
    t.equal((await entries(type.id, 'assay_type.deleted')).length, 1);
    t.equal((await entries(type.id, 'assay_type.updated')).length, update.status === 200 ? 1 : 0, 'an update entry only for an update that happened');
  }
});

t.test('one name taken at once by creates and a rename: one wins, the others are 409', async (t) => {
  for (let i = 0; i < TRIES; i++) {
    const name = `Contested ${i}`;
    const other = await assayType();
    const responses = await Promise.all([
      server.post('/api/v1/assay-types', { name }, k),
      server.post('/api/v1/assay-types', { name: name.toUpperCase() }, k),
      server.put(`/api/v1/assay-types/${other.id}`, { name }, k),
    ]);
    t.same(responses.map((r) => r.status).filter((s) => s !== 409).length, 1, responses.map((r) => r.status).join(' '));
    statuses(t, responses, [[201, 409], [201, 409], [200, 409]]);
    const live = await server.sql(`select id from assay_type where lower(name) = lower(?) and status <> 'DELETED'`, [name]);
    t.equal(live.length, 1, 'one live type has the name');
  }
});
