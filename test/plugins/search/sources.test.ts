// search.sources (issue 30): a third party's records are searchable like the built-in ones; the
// plugin order does not matter; bulk statements keep documents current (statement-level
// triggers only); rows loaded with triggers off are indexed by `labdata recount`; a deployment
// that enables search later has its records indexed by the search plugin's migration.
import crypto from 'node:crypto';
import t from 'tap';
import { definePlugin } from '../../../core/public.ts';
import { searchable } from '../../../plugins/search/extensions.ts';
import { migratedDatabase, startTestServer, type Member, type TestServer } from '../../support/server.ts';
import { recount } from '../../../app/db/recount.ts';

// A third party's plugin, written as one would be: its own table, declared searchable through
// the search plugin's extensions.ts; its instruments sit in projects and are seen as they are.
const instruments = searchable('instruments', {
  kind: 'instrument',
  table: 'instruments_instrument',
  alias: 'i',
  fields: [{ sql: 'i.name', weight: 'A', names: true }, { sql: 'i.notes', weight: 'C' }],
  code: 'i.serial',
  title: 'i.name',
  parent: 'i.project_id',
  archived: 'i.retired',
});
const instrumentsPlugin = definePlugin({
  name: 'instruments',
  version: '1.0.0',
  dependsOn: ['projects'],
  migrations: [
    {
      name: 'instruments-0001-init',
      sql: [`create table instruments_instrument (id uuid primary key, organization_id uuid not null, project_id uuid not null,
        name text not null, notes text, serial text, retired boolean not null default false)`],
    },
    instruments.migration,
  ],
  setup(ctx) {
    instruments.declare(ctx);
  },
});

// The search plugin first in the list: it is set up, and migrated, before the plugins whose records it searches.
const PLUGINS = ['search', 'users', 'projects', 'studies'];
const server = await startTestServer(t, { plugins: PLUGINS, extraPlugins: [instrumentsPlugin] });
const org = await server.organization();
const admin = await server.admin(org);
const alice = await server.member(org);
const bob = await server.member(org);

async function project(s: TestServer, owner: Member, visibility: string, name = 'Microscopy core') {
  const res = await s.post('/api/v1/projects', { code: 'MIC', name, description: 'Shared instruments', visibility }, { key: owner.key });
  if (res.status !== 201) throw new Error(res.text);
  return res.body.id as string;
}

async function search(s: TestServer, who: Member, query: string) {
  const res = await s.get(`/api/v1/search?${query}`, { key: who.key });
  if (res.status !== 200) throw new Error(`${res.status} ${res.text}`);
  return res.body as { totalElements: number; content: { id: string; type: string; projectId: string | null; title: string }[] };
}

t.test('a third party\'s records: found, seen as their project, listed among the types', async (t) => {
  const open = await project(server, alice, 'PUBLIC');
  const closed = await project(server, alice, 'PRIVATE');
  await server.sql(`insert into instruments_instrument (id, organization_id, project_id, name, notes, serial) values
    (gen_random_uuid(), ?, ?, 'Confocal microscope', 'Laser lines 405 and 488', 'SN-CONF-1'),
    (gen_random_uuid(), ?, ?, 'Electron microscope', 'Cryo stage', 'SN-EM-2')`, [org, open, org, closed]);
  const forBob = await search(server, bob, 'q=microscope&types=instrument');
  t.match(forBob, { totalElements: 1, content: [{ type: 'instrument', title: 'Confocal microscope', projectId: open }] });
  t.equal((await search(server, alice, 'q=microscope&types=instrument')).totalElements, 2, 'the PRIVATE project\'s instrument for its member');
  t.equal((await search(server, bob, 'q=sn-em')).totalElements, 0, 'nor by its code');
  t.match(await search(server, alice, 'q=sn-em'), { totalElements: 1, content: [{ title: 'Electron microscope' }] }, 'a code prefix');
  await server.sql(`update instruments_instrument set retired = true where serial = 'SN-CONF-1'`);
  t.equal((await search(server, bob, 'q=confocal')).totalElements, 0, 'archived');
  t.equal((await search(server, bob, 'q=confocal&archived=true')).totalElements, 1);
  const bad = await server.get('/api/v1/search?q=x&types=instrument,note', { key: bob.key });
  t.match(bad.body, { errors: [{ field: 'types', message: 'unknown type "note"; one of project, study, instrument' }] }, 'the kinds of this deployment');
});

t.test('one INSERT ... SELECT of thousands of rows: one statement-level trigger run, every row findable', async (t) => {
  const p = await project(server, admin, 'PROTECTED', 'Bulk');
  await server.sql(`insert into study (id, organization_id, project_id, code, name, description, status, created_by_id)
    select gen_random_uuid(), ?, ?, 'BULK-' || lpad(g::text, 5, '0'), 'Imported study ' || g, 'Imported from the old system', 'ACTIVE', ?
      from generate_series(1, 3000) g`, [org, p, admin.organizationUserId]);
  t.equal((await search(server, bob, 'q=imported&types=study')).totalElements, 3000);
  t.equal((await search(server, bob, 'q=BULK-01')).totalElements, 1000, 'BULK-01000 to BULK-01999');
  t.match(await search(server, bob, 'q=bulk-02999'), { content: [{ title: 'Imported study 2999' }] });
  const rowTriggers = await server.sql<{ n: number }>(`select count(*)::int as n from pg_trigger
    where (tgname like 'search\\_%' or tgfoid::regproc::text like 'labdata\\_search\\_%') and tgtype & 1 = 1`);
  t.equal(rowTriggers[0].n, 0, 'no search trigger runs once per row');
  const statementTriggers = await server.sql<{ n: number }>(`select count(*)::int as n from pg_trigger where tgname like 'search\\_%'`);
  t.equal(statementTriggers[0].n, 3 * 3 + 2, 'insert, update and delete of project, study and the instruments; the documents\' own two');
});

t.test('rows loaded with triggers off are indexed (and deleted ones dropped) by labdata recount', async (t) => {
  const p = await project(server, admin, 'PUBLIC', 'Restored');
  const [{ id }] = await server.orm.em.fork().transactional(async (tx) => {
    await tx.execute('set local session_replication_role = replica');
    await tx.execute(`insert into study (id, organization_id, project_id, name, status, created_by_id)
      select gen_random_uuid(), ?, ?, 'Restored study ' || g, 'ACTIVE', ? from generate_series(1, 50) g`, [org, p, admin.organizationUserId]);
    return tx.execute(`delete from study where name = 'Imported study 1' returning id`);
  });
  t.equal((await search(server, bob, 'q=restored&types=study')).totalElements, 0, 'not indexed yet');
  t.equal((await search(server, bob, 'q=imported&types=study')).totalElements, 3000, 'the deleted one still indexed');
  const result = await recount(server.kernel.services.counters, server.orm.em.fork());
  t.ok(result.repaired >= 51, 'the repairs wrote the documents');
  t.equal((await search(server, bob, 'q=restored&types=study')).totalElements, 50);
  t.equal((await search(server, bob, 'q=imported&types=study')).totalElements, 2999);
  t.ok(id);
});

t.test('a record inserted again under the id of a document left behind is found by its new words only', async (t) => {
  const p = await project(server, admin, 'PUBLIC', 'Reloaded');
  const res = await server.post('/api/v1/studies', { projectId: p, name: 'Zanzibar titration' }, { key: admin.key });
  t.equal(res.status, 201);
  // Deleted with the triggers off (a restore gone wrong): its document stays, with the old words.
  await server.orm.em.fork().transactional(async (tx) => {
    await tx.execute('set local session_replication_role = replica');
    await tx.execute('delete from study where id = ?', [res.body.id]);
  });
  await server.sql(`insert into study (id, organization_id, project_id, name, status, created_by_id) values (?, ?, ?, 'Quokka titration', 'ACTIVE', ?)`,
    [res.body.id, org, p, admin.organizationUserId]);
  t.match(await search(server, bob, 'q=quokka'), { totalElements: 1, content: [{ id: res.body.id, title: 'Quokka titration' }] });
  t.equal((await search(server, bob, 'q=zanzibar')).totalElements, 0, 'not by the words it had');
});

t.test('a parent inserted after its children passes them its place and visibility', async (t) => {
  const parent = crypto.randomUUID();
  await server.sql(`insert into instruments_instrument (id, organization_id, project_id, name, serial) values (gen_random_uuid(), ?, ?, 'Orphaned centrifuge', 'SN-ORPH-1')`,
    [org, parent]);
  t.equal((await search(server, bob, 'q=centrifuge')).totalElements, 0, 'no project yet: seen by nobody but admins');
  await server.sql(`insert into project (id, organization_id, code, name, description, visibility, status, created_by_id)
    values (?, ?, 'LATE', 'Late project', 'Loaded after its instruments', 'PUBLIC', 'ACTIVE', ?)`, [parent, org, admin.organizationUserId]);
  t.match(await search(server, bob, 'q=centrifuge'), { totalElements: 1, content: [{ type: 'instrument', projectId: parent }] });
});

t.test('a deployment that enables search later: its records are indexed by the search plugin\'s migration', async (t) => {
  const without = ['users', 'projects', 'studies'];
  const databaseUrl = await migratedDatabase(t, without);
  const before = await startTestServer(t, { databaseUrl, plugins: without });
  const beforeOrg = await before.organization();
  const owner = await before.member(beforeOrg);
  const p = await project(before, owner, 'PUBLIC', 'Legacy bandicoot project');
  t.equal((await before.sql(`select count(*)::int as n from pg_trigger where tgname like 'search\\_%'`))[0].n, 0, 'without search: no trigger');
  t.equal((await before.get('/api/v1/search?q=bandicoot', { key: owner.key })).status, 404, 'and no route');
  const after = await startTestServer(t, { databaseUrl, plugins: [...without, 'search'] });
  t.match(await search(after, owner, 'q=bandicoot'), { totalElements: 1, content: [{ id: p, type: 'project' }] });
  const res = await after.post('/api/v1/studies', { projectId: p, name: 'Bandicoot burrows' }, { key: owner.key });
  t.equal(res.status, 201);
  t.equal((await search(after, owner, 'q=bandicoot')).totalElements, 2, 'and kept current from then on');
});
