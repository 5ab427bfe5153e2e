import t, { type Test } from 'tap';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startTestServer, testCast, type Response } from '../../support/server.ts';
import { records } from '../external-links/records.ts';
import { drives, PLUGINS } from './support.ts';

// Folder writes sent truly at once (parallel HTTPS requests on a real PostgreSQL) end as one
// serial order of them would: one primary per record with folders, no attachment left on a
// deleted record, activity filed where the record is now. Each race runs a few rounds.
const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'labdata-folder-races-'));
t.teardown(() => fs.rm(tmp, { recursive: true, force: true }));
const dataDir = path.join(tmp, 'data');
const nas = path.join(tmp, 'nas');
const FOLDERS = ['a', 'b', 'c', 'd'];
await fs.mkdir(dataDir);
for (const dir of FOLDERS) await fs.mkdir(path.join(nas, dir), { recursive: true });

const server = await startTestServer(t, { plugins: PLUGINS, env: { LABDATA_DATA_DIR: dataDir } });
const { org, admin, alice } = await testCast(server);
const make = records(server);
const { nas: driveId } = await drives(server, [{ ref: 'nas', organization: org, name: 'Lab NAS', kind: 'LOCAL', rootPath: nas }]);
const k = { key: alice.key };
const home = await make.project(alice);
/** A fresh study (no folders yet) in alice's project. */
const study = () => make.study(alice, home.id);
const away = await make.project(alice);
const api = (p: string) => '/api/v1' + p;
const ROUNDS = 4;

const attach = (base: string, folder: string) => server.post(api(`${base}/storage-folders`), { driveId, path: folder }, k);
const setPrimary = (base: string, id: string) => server.request('PATCH', api(`${base}/storage-folders/${id}`), { ...k, body: { primary: true } });
const detach = (base: string, id: string) => server.delete(api(`${base}/storage-folders/${id}`), k);
async function attached(base: string, folder: string): Promise<string> {
  const res = await attach(base, folder);
  if (res.status !== 201) throw new Error(`attach failed: ${res.status} ${res.text}`);
  return res.body.id;
}
/** The record's attachments as stored: id → primary. */
async function stored(parentId: string): Promise<Record<string, boolean>> {
  const rows = await server.sql<{ id: string; is_primary: boolean }>('select id, is_primary from storage_folder where parent_id = ?', [parentId]);
  return Object.fromEntries(rows.map((r) => [r.id, r.is_primary]));
}
const events = (type: string, parentId: string) =>
  server.sql<{ data: Record<string, any>; project_id: string }>(
    `select data, project_id from activity where event_type = ? and (study_id = ? or assay_id = ?)`,
    [type, parentId, parentId],
  );

function statuses(t: Test, responses: Response[], allowed: number[]) {
  for (const res of responses) t.ok(allowed.includes(res.status), `${res.status} is one of ${allowed} (${res.text})`);
}

t.test('concurrent attaches to a record without folders: all 201, exactly one becomes primary', async (t) => {
  for (let i = 0; i < ROUNDS; i++) {
    const { id } = await study();
    const base = `/studies/${id}`;
    const res = await Promise.all(FOLDERS.map((f) => attach(base, f)));
    statuses(t, res, [201]);
    t.equal(res.filter((r) => r.body.primary).length, 1, 'one answer says primary');
    const rows = await stored(id);
    t.equal(Object.keys(rows).length, FOLDERS.length, 'every folder attached');
    t.same(Object.keys(rows).filter((id) => rows[id]), res.filter((r) => r.body.primary).map((r) => r.body.id), 'and it is the stored primary');
    t.equal((await events('storage_folder.attached', id)).filter((e) => e.data.primary).length, 1, 'one attached entry says primary');
  }
});

t.test('concurrent set-primary: all 200, one primary, each entry names the primary it replaced', async (t) => {
  for (let i = 0; i < ROUNDS; i++) {
    const { id } = await study();
    const base = `/studies/${id}`;
    const ids: string[] = [];
    for (const f of FOLDERS) ids.push(await attached(base, f));
    const targets = ids.slice(1);
    const res = await Promise.all(targets.map((id) => setPrimary(base, id)));
    statuses(t, res, [200]);
    const rows = await stored(id);
    const primary = Object.keys(rows).filter((id) => rows[id]);
    t.equal(primary.length, 1, 'exactly one primary');
    t.ok(targets.includes(primary[0]), 'one of the requested ones');
    // Serially, each change replaces the one before: the first one's primary, then each target but the last.
    const previous = (await events('storage_folder.primary_changed', id)).map((e) => e.data.previousFolderId).sort();
    t.same(previous, [ids[0], ...targets.filter((id) => id !== primary[0])].sort(), 'a chain of replacements');
  }
});

t.test('concurrent detaches, set-primary and attach: one primary whenever folders remain', async (t) => {
  for (let i = 0; i < ROUNDS; i++) {
    const { id } = await study();
    const base = `/studies/${id}`;
    const [a, b, c] = [await attached(base, 'a'), await attached(base, 'b'), await attached(base, 'c')];
    const res = await Promise.all([detach(base, a), detach(base, b), setPrimary(base, c), attach(base, 'd')]);
    t.same(res.map((r) => r.status), [204, 204, 200, 201], res.map((r) => r.text).join(' '));
    // Whatever the order, c ends primary (it is made primary, and d only would be on an empty record).
    t.same(await stored(id), { [c]: true, [res[3].body.id]: false });
  }
  for (let i = 0; i < ROUNDS; i++) {
    const { id } = await study();
    const base = `/studies/${id}`;
    const ids: string[] = [];
    for (const f of FOLDERS) ids.push(await attached(base, f));
    // The primary and two others go at once: the one left must be primary.
    const res = await Promise.all(ids.slice(0, 3).map((id) => detach(base, id)));
    statuses(t, res, [204]);
    t.same(await stored(id), { [ids[3]]: true });
  }
});

t.test('the same folder attached at once: one 201, the others 409', async (t) => {
  for (let i = 0; i < ROUNDS; i++) {
    const { id } = await study();
    const res = await Promise.all([1, 2, 3].map(() => attach(`/studies/${id}`, 'a')));
    t.same(res.map((r) => r.status).sort(), [201, 409, 409]);
    t.same(Object.values(await stored(id)), [true]);
  }
});

t.test('attaching to a study while it is deleted: attached and deleted with it, or 404; never left behind', async (t) => {
  for (let i = 0; i < ROUNDS; i++) {
    const { id } = await study();
    const base = `/studies/${id}`;
    const res = await Promise.all([...FOLDERS.map((f) => attach(base, f)), server.delete(api(base), k)]);
    t.equal(res.at(-1)!.status, 204);
    statuses(t, res.slice(0, -1), [201, 404]);
    t.same(await stored(id), {}, 'no attachment of a deleted study');
  }
});

t.test("attaching to an assay while its study moves: the entries follow the assay to its new project", async (t) => {
  for (let i = 0; i < ROUNDS; i++) {
    const { id } = await study();
    const assay = await make.assay(alice, id, admin);
    const base = `/assays/${assay.id}`;
    const res = await Promise.all([
      ...FOLDERS.map((f) => attach(base, f)),
      server.request('PATCH', api(`/studies/${id}/move`), { ...k, body: { projectId: away.id } }),
    ]);
    statuses(t, res, [200, 201]);
    const entries = await events('storage_folder.attached', assay.id);
    t.equal(entries.length, FOLDERS.length);
    t.same(new Set(entries.map((e) => e.project_id)), new Set([away.id]), 'every entry is in the project the assay is in');
    t.equal(Object.values(await stored(assay.id)).filter(Boolean).length, 1, 'one primary');
  }
});
