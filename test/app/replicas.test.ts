// Reads on a streaming hot standby (LABDATA_DATABASE_READ_URLS, app/db/replicas.ts), tested on
// Debian's PostgreSQL 15: a primary and a standby from `pg_basebackup -R` (test/support/replication.ts).
// A key reads its own writes; other reads are never older than LABDATA_READ_MAX_LAG_MS; a standby
// that stops, pauses or lags costs no failed request; security facts are read on the primary.
import t from 'tap';
import { createDatabase, sqlOn, startPrimary, startStandby } from '../support/replication.ts';
import { startTestServer } from '../support/server.ts';

const MAX_LAG_MS = 500;
const primary = await startPrimary(t);
const standby = await startStandby(t, primary);
await createDatabase(primary, 'labdata');
await standby.caughtUp();
const server = await startTestServer(t, {
  databaseUrl: primary.url('labdata'),
  plugins: ['users', 'projects', 'studies', 'activity', 'teams'],
  env: { LABDATA_DATABASE_URL: primary.url('labdata'), LABDATA_DATABASE_READ_URLS: standby.url('labdata'), LABDATA_READ_MAX_LAG_MS: String(MAX_LAG_MS) },
});
const org = await server.organization();
const admin = await server.admin(org);
const writer = await server.member(org);
const reader = await server.member(org);
await standby.caughtUp();

/** Read operations served so far, by target (labdata_db_reads_total). */
async function reads(): Promise<Record<string, number>> {
  const text = (await server.get('/metrics', { key: admin.key })).text;
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^labdata_db_reads_total\{target="(\w+)"\} (\d+)/gm)) out[m[1]] = Number(m[2]);
  return out;
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const project = async (who: typeof writer, name: string) => {
  const res = await server.post('/api/v1/projects', { code: 'R', name, description: 'd', visibility: 'PUBLIC' }, { key: who.key });
  if (res.status !== 201) throw new Error(`${res.status} ${res.text}`);
  return res.body as { id: string };
};

t.test('reads go to the standby once it has what the key wrote', async (t) => {
  // A standby more than MAX_LAG_MS behind takes no reads, rightly: on a machine busy with other
  // tests its replay can fall that far behind for a moment. So a round of 20 reads is tried again
  // (up to 5 rounds, each after the standby caught up) until the standby served most of one.
  let served = 0;
  let after: Record<string, number> = {};
  for (let round = 0; round < 5 && served < 15; round++) {
    await standby.caughtUp();
    const before = await reads();
    for (let i = 0; i < 20; i++) t.equal((await server.get('/api/v1/projects', { key: reader.key })).status, 200);
    after = await reads();
    served = (after.standby1 ?? 0) - (before.standby1 ?? 0);
  }
  t.ok(served >= 15, `the standby served the reads: ${JSON.stringify(after)}`);
  const ready = await server.get('/readyz');
  t.match(ready.body.databases, [{ name: 'primary', up: true }, { name: 'standby1', role: 'standby', up: true, serving: true }]);
});

t.test('200 write-then-read rounds by one key never miss the write', async (t) => {
  let missed = 0;
  for (let i = 0; i < 100; i++) {
    const created = await project(writer, `Round ${i}`);
    const read = await server.get(`/api/v1/projects/${created.id}`, { key: writer.key });
    if (read.status !== 200) missed++;
    const renamed = await server.put(`/api/v1/projects/${created.id}`, { name: `Round ${i} renamed` }, { key: writer.key });
    const again = await server.get(`/api/v1/projects/${created.id}`, { key: writer.key });
    if (renamed.status !== 200 || again.body?.name !== `Round ${i} renamed`) missed++;
    // Now and then the standby catches up meanwhile and may serve the key again.
    if (i % 25 === 24) await sleep(150);
  }
  t.equal(missed, 0, 'every read after a write saw it');
});

t.test('replay paused: a fresh write is read correctly, other reads are never older than the lag bound', async (t) => {
  await standby.pause();
  t.teardown(() => standby.resume());
  const paused = Date.now();
  const created = await project(writer, 'While paused');
  t.equal((await server.get(`/api/v1/projects/${created.id}`, { key: writer.key })).status, 200, 'the writer sees its write');
  // Another key: the standby (without the write) may serve it only while its data is young enough.
  for (;;) {
    const list = await server.get('/api/v1/projects?size=200&sort=createdAt,desc', { key: reader.key });
    const seen = list.body.content.some((p: { id: string }) => p.id === created.id);
    if (Date.now() - paused > MAX_LAG_MS + 250) {
      t.ok(seen, 'past the lag bound the read sees the write (the stale standby is skipped)');
      break;
    }
    await sleep(50);
  }
  const before = await reads();
  await server.get('/api/v1/projects', { key: reader.key });
  const after = await reads();
  t.equal((after.standby1 ?? 0) - (before.standby1 ?? 0), 0, 'a standby older than the bound takes no reads');
});

t.test('a write on one instance is read on another at once (the fence travels with the auth notifications)', async (t) => {
  const other = await startTestServer(t, {
    databaseUrl: primary.url('labdata'),
    plugins: ['users', 'projects', 'studies', 'activity', 'teams'],
    env: { LABDATA_DATABASE_URL: primary.url('labdata'), LABDATA_DATABASE_READ_URLS: standby.url('labdata'), LABDATA_READ_MAX_LAG_MS: '60000' },
  });
  await standby.caughtUp();
  await sleep(250);
  // Warm: the other instance knows the key (cached) and reads on the standby.
  t.equal((await other.get('/api/v1/projects', { key: writer.key })).status, 200);
  await standby.pause();
  t.teardown(() => standby.resume());
  let missed = 0;
  for (let i = 0; i < 20; i++) {
    const created = await project(writer, `Across ${i}`);
    if ((await other.get(`/api/v1/projects/${created.id}`, { key: writer.key })).status !== 200) missed++;
  }
  t.equal(missed, 0, 'the other instance served every read of the fresh writes (on the primary)');
});

t.test('security facts are current whatever the standby\'s lag', async (t) => {
  await standby.pause();
  t.teardown(() => standby.resume());
  const victim = await server.member(org);
  const demoted = await server.admin(org);
  t.equal((await server.get('/api/v1/projects', { key: victim.key })).status, 200);
  t.equal((await server.post('/api/v1/teams', { name: 'T' }, { key: demoted.key })).status, 201);
  await server.revoke(victim.keyId);
  t.equal((await server.get('/api/v1/projects', { key: victim.key })).status, 401, 'a revoked key is refused on the very next request');
  await server.setRoles(demoted.organizationUserId, ['ORGANIZATION_USER']);
  t.equal((await server.post('/api/v1/teams', { name: 'T2' }, { key: demoted.key })).status, 403, 'a removed admin role is refused at once');
  const deactivated = await server.member(org);
  await server.sql(`update organization_user set status = 'INACTIVE' where id = ?`, [deactivated.organizationUserId]);
  t.equal((await server.get('/api/v1/projects', { key: deactivated.key })).status, 401, 'a deactivated user is refused at once');
});

t.test('a standby stopped under load costs no failed request', async (t) => {
  await standby.caughtUp();
  let failed = 0;
  let done = 0;
  let running = true;
  const loops = Array.from({ length: 8 }, async () => {
    while (running) {
      const res = await server.get('/api/v1/projects?size=5', { key: reader.key });
      if (res.status !== 200) failed++;
      done++;
    }
  });
  await sleep(300);
  await standby.stop();
  await sleep(600);
  await standby.start();
  await standby.caughtUp();
  await sleep(300);
  running = false;
  await Promise.all(loops);
  t.equal(failed, 0, `none of ${done} reads failed`);
  const ready = await server.get('/readyz');
  t.equal(ready.status, 200);
});

t.test('totals read on the standby equal count(*) there', async (t) => {
  await standby.caughtUp();
  await sleep(250);
  const before = await reads();
  const [admins, members] = await Promise.all([server.get('/api/v1/projects?size=1', { key: admin.key }), server.get('/api/v1/studies?size=1', { key: reader.key })]);
  const after = await reads();
  t.ok((after.standby1 ?? 0) - (before.standby1 ?? 0) >= 2, 'both read on the standby');
  const [{ n: projects }] = await sqlOn(standby.url('labdata'), 'select count(*)::int as n from project where organization_id = $1', [org]);
  const [{ n: studies }] = await sqlOn(standby.url('labdata'), 'select count(*)::int as n from study where organization_id = $1', [org]);
  t.equal(admins.body.totalElements, projects);
  t.equal(members.body.totalElements, studies);
});
