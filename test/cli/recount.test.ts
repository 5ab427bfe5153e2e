// `labdata migrate`, `bootstrap` and `recount` as an operator runs them (issue 10's recount verb and
// issue 12, point 6's progress): without a TTY each step is one plain line on stderr.
import pg from 'pg';
import t, { type Test } from 'tap';
import { createTestDatabase } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import { runCli, runCliInProcess, tempFile } from './labdata-cli.ts';

const databaseUrl = await createTestDatabase(t);
// The first migrate is the real launcher; the other runs are the CLI's code in this process.
const launched = (args: string[]) => runCli(args, { LABDATA_DATABASE_URL: databaseUrl });
const cli = (args: string[]) => runCliInProcess(args, { LABDATA_DATABASE_URL: databaseUrl });
const progressLines = (stderr: string, label: string) => stderr.split('\n').filter((line) => line.startsWith(`${label} `));

/**
 * A `labdata recount` held up where it counts assays (a test connection holds that table): it
 * has its snapshot and its lock by then. `release()` lets it go on.
 */
async function heldRecount(t: Test, url: string) {
  const blocker = new pg.Client({ connectionString: url });
  await blocker.connect();
  t.teardown(() => blocker.end());
  await blocker.query('begin');
  await blocker.query('lock table assay in access exclusive mode');
  const recount = cli(['recount']);
  for (let waited = 0; ; waited += 50) {
    const { rows } = await blocker.query(`select count(*)::int as n from pg_locks l join pg_class c on c.oid = l.relation where c.relname = 'assay' and not l.granted and l.database = (select oid from pg_database where datname = current_database())`);
    if (rows[0].n > 0) break;
    if (waited > 30_000) throw new Error('the recount never reached the assays');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { recount, release: () => blocker.query('rollback') };
}

t.test('migrate applies the migrations of an empty database, one progress line per migration', async (t) => {
  const res = await launched(['migrate']);
  t.equal(res.code, 0, res.stderr);
  t.equal(res.json.migrations, 'up to date');
  t.ok(res.json.applied.length > 10, 'kernel and plugin migrations applied');
  t.ok(res.json.plugins.includes('projects'));
  const lines = progressLines(res.stderr, 'migrate');
  t.same(lines.slice(0, res.json.applied.length), res.json.applied.map((name: string, i: number) => `migrate ${i}/${res.json.applied.length} ${name}`));
  t.equal(lines.at(-1), `migrate ${res.json.applied.length}/${res.json.applied.length} migrations applied`);
  // eslint-disable-next-line no-control-regex -- an ANSI escape is what the test looks for
  t.notMatch(res.stderr, /\r|\x1b\[/, 'no terminal control sequences when stderr is not a TTY');
  const again = await cli(['migrate']);
  t.equal(again.code, 0, again.stderr);
  t.same(again.json.applied, [], 'a second run has nothing to apply');
});

t.test('bootstrap reports one progress line per section it applies', async (t) => {
  const file = await tempFile({
    organizations: [{ ref: 'o', name: 'Progress Org' }],
    users: [{ ref: 'u', email: 'progress@example.test', memberships: [{ organization: 'o', roles: ['ORGANIZATION_ADMIN'] }] }],
    apiKeys: [{ ref: 'k', user: 'u', organization: 'o', name: 'ci', days: 7 }],
  });
  const res = await cli(['bootstrap', file]);
  t.equal(res.code, 0, res.stderr);
  t.same(progressLines(res.stderr, 'bootstrap'), ['bootstrap 1/3 organizations (1)', 'bootstrap 2/3 users (1)', 'bootstrap 3/3 apiKeys (1)']);
  t.match(res.json, { organizations: { o: { id: String } }, apiKeys: { k: { key: String } } }, 'stdout is still the JSON alone');
});

t.test('recount repairs totals after a load that bypassed the triggers; a second run changes nothing', async (t) => {
  const server = await startTestServer(t, { databaseUrl });
  const org = await server.organization('Loaded');
  const admin = await server.admin(org);
  const member = await server.member(org);
  for (const visibility of ['PUBLIC', 'PRIVATE']) {
    const res = await server.post('/api/v1/projects', { code: 'P', name: `Made ${visibility}`, description: 'd', visibility }, { key: admin.key });
    t.equal(res.status, 201);
  }
  // An operator's bulk load, triggers off (as a restore can do): the counters never see it.
  await server.orm.em.fork().transactional(async (em) => {
    await em.execute('set local session_replication_role = replica');
    await em.execute(
      `insert into project (id, organization_id, code, name, description, visibility, status, created_by_id)
       select gen_random_uuid(), ?, 'B' || g, 'Bulk ' || g, 'loaded', (array['PUBLIC','PROTECTED','PRIVATE'])[1 + g % 3], 'ACTIVE', ?
         from generate_series(1, 25) g`,
      [org, admin.organizationUserId],
    );
    await em.execute(
      `insert into activity (id, organization_id, event_type, category, data, date, project_id, organization_user_id)
       select gen_random_uuid(), p.organization_id, 'project.created', 'RESEARCH', '{}', now(), p.id, ?
         from project p where p.description = 'loaded'`,
      [admin.organizationUserId],
    );
    // Grants loaded the same way carry no copy of their project's visibility: recount repairs them.
    await em.execute(
      `insert into project_member (id, organization_id, project_id, organization_user_id)
       select gen_random_uuid(), p.organization_id, p.id, ? from project p where p.description = 'loaded' and p.visibility = 'PRIVATE'`,
      [member.organizationUserId],
    );
  });
  const count = async (sql: string) => Number((await server.sql<{ n: string }>(sql, [org]))[0].n);
  const loadedGrants = await count(`select count(*) as n from project_member where organization_id = ? and project_visibility is null`);
  t.ok(loadedGrants > 0, `${loadedGrants} grants loaded without their project's visibility`);
  const rows = {
    projects: await count('select count(*) as n from project where organization_id = ?'),
    visible: await count(`select count(*) as n from project p where organization_id = ? and (visibility <> 'PRIVATE'
      or exists (select 1 from project_member pm where pm.project_id = p.id and pm.organization_user_id = '${member.organizationUserId}'))`),
    activity: await count('select count(*) as n from activity where organization_id = ?'),
  };
  const totals = async () => ({
    projects: (await server.get('/api/v1/projects?size=1', { key: admin.key })).body.totalElements,
    visible: (await server.get('/api/v1/projects?size=1', { key: member.key })).body.totalElements,
    activity: (await server.get('/api/v1/activity?size=1', { key: admin.key })).body.totalElements,
  });
  const stale = await totals();
  t.not(stale.projects, rows.projects, 'before the recount the admin total misses the loaded projects');
  t.not(stale.activity, rows.activity, 'and the activity total misses the loaded activity');

  const res = await cli(['recount']);
  t.equal(res.code, 0, res.stderr);
  t.match(res.json, { statements: Number, durationMs: Number });
  t.ok(res.json.statements > 0);
  const lines = progressLines(res.stderr, 'recount');
  // The statements, the snapshot, and one correction per counter table.
  const total = Number(/\/(\d+) done$/.exec(lines.at(-1) ?? '')?.[1]);
  t.ok(total > res.json.statements + 1, `${total} steps`);
  t.match(lines[0], /^recount 0\/\d+ /, 'progress starts at 0');
  t.equal(res.json.passes, 2, 'one pass corrects, a second finds nothing left');
  t.ok(res.json.corrected > 0, `it says it corrected counters (${res.json.corrected})`);
  t.equal(res.json.repaired, loadedGrants + 25, 'and repaired each loaded grant, and indexed each loaded project for search');
  t.equal((await server.get('/api/v1/search?q=bulk', { key: admin.key })).body.totalElements, 25, 'the loaded projects are found');
  t.ok(lines.includes(`recount ${total - 1}/${total} correct grant_count`), 'and corrects each counter table, the last before done');
  t.equal(lines.at(-1), `recount ${total}/${total} done`);
  t.equal(lines.length, total + 1, 'one line per step');
  t.same(await totals(), rows, 'REST totals equal count(*) after the recount');

  const snapshot = () => server.sql('select organization_id, kind, class, category, actor_id, sum(n)::int as n from visibility_count group by 1, 2, 3, 4, 5 order by 1, 2, 3, 4, 5');
  const before = await snapshot();
  const second = await cli(['recount']);
  t.equal(second.code, 0, second.stderr);
  t.same(await snapshot(), before, 'a second recount changes no counter');
  t.equal(second.json.passes, 1, 'in one pass');
  t.equal(second.json.corrected, 0, 'and says nothing needed it');
  t.equal(second.json.repaired, 0, 'nor any repair');
  t.same(await totals(), rows);
});

t.test('recount while the service takes writes: it completes every time, no writer fails, totals stay exact', async (t) => {
  const server = await startTestServer(t, { databaseUrl });
  const org = await server.organization('Busy');
  const admin = await server.admin(org);
  let running = true;
  const failures: string[] = [];
  // Writers touching several counted tables in one transaction each (project, study, task, activity).
  const writer = async () => {
    while (running) {
      const p = await server.post('/api/v1/projects', { code: 'W', name: 'Written', description: 'd', visibility: 'PUBLIC' }, { key: admin.key });
      const answers = [p];
      if (p.status === 201) {
        answers.push(await server.post('/api/v1/studies', { projectId: p.body.id, name: 'S' }, { key: admin.key }));
        answers.push(await server.post(`/api/v1/projects/${p.body.id}/tasks`, { label: 'T' }, { key: admin.key }));
        answers.push(await server.put(`/api/v1/projects/${p.body.id}`, { visibility: 'PRIVATE' }, { key: admin.key }));
        answers.push(await server.delete(`/api/v1/projects/${p.body.id}`, { key: admin.key }));
      }
      for (const res of answers) if (res.status >= 300) failures.push(`${res.status} ${res.text}`);
    }
  };
  const writers = Array.from({ length: 6 }, writer);
  for (let i = 0; i < 2; i++) {
    const res = await cli(['recount']);
    t.equal(res.code, 0, `recount ${i + 1} completes under load: ${res.stderr.split('\n').filter((l) => l.startsWith('labdata:')).join(' ')}`);
  }
  running = false;
  await Promise.all(writers);
  t.same(failures, [], 'every write answered 2xx');
  const [row] = await server.sql<{ n: string }>('select count(*) as n from project where organization_id = ?', [org]);
  t.equal((await server.get('/api/v1/projects?size=1', { key: admin.key })).body.totalElements, Number(row.n), 'the total equals count(*)');
});

t.test('writers and readers never wait for a recount: a write completes while the recount is held up mid-count', async (t) => {
  const server = await startTestServer(t, { databaseUrl });
  const org = await server.organization('Unhurried');
  const admin = await server.admin(org);
  const study = await server.post('/api/v1/studies', { projectId: (await server.post('/api/v1/projects', { code: 'U', name: 'U', description: 'd' }, { key: admin.key })).body.id, name: 'S' }, { key: admin.key });
  const { recount, release } = await heldRecount(t, server.databaseUrl);
  const slow = new Promise<'waited'>((resolve) => setTimeout(() => resolve('waited'), 10_000));
  const writes = Promise.all([
    server.post('/api/v1/projects', { code: 'W', name: 'Written meanwhile', description: 'd', visibility: 'PRIVATE' }, { key: admin.key }),
    server.put(`/api/v1/studies/${study.body.id}`, { name: 'Renamed meanwhile' }, { key: admin.key }),
    server.get('/api/v1/activity?size=1', { key: admin.key }),
  ]);
  const answered = await Promise.race([writes, slow]);
  t.not(answered, 'waited', 'a create, an update and a feed read answered while the recount ran');
  if (answered !== 'waited') t.same(answered.map((res) => res.status), [201, 200, 200]);
  await release();
  const res = await recount;
  t.equal(res.code, 0, res.stderr);
  // What committed after the recount's snapshot is counted once: totals equal count(*).
  for (const [path, table] of [['/api/v1/projects?size=1', 'project'], ['/api/v1/activity?size=1', 'activity'], ['/api/v1/studies?size=1', 'study']]) {
    const [row] = await server.sql<{ n: string }>(`select count(*) as n from ${table} where organization_id = ?`, [org]);
    t.equal((await server.get(path, { key: admin.key })).body.totalElements, Number(row.n), `${path}: the total equals count(*)`);
  }
});

t.test('counts moved while a recount corrects them (a visibility change, a grant) end up exact: the recount passes again', async (t) => {
  const server = await startTestServer(t, { databaseUrl });
  const org = await server.organization('Drifted');
  const admin = await server.admin(org);
  const outsider = await server.member(org);
  const grantee = await server.member(org);
  const opened = (await server.post('/api/v1/projects', { code: 'O', name: 'Open', description: 'd', visibility: 'PUBLIC' }, { key: admin.key })).body.id;
  const closed = (await server.post('/api/v1/projects', { code: 'C', name: 'Closed', description: 'd', visibility: 'PRIVATE' }, { key: admin.key })).body.id;
  // Studies loaded with the triggers off: the counters know none of them.
  await server.orm.em.fork().transactional(async (em) => {
    await em.execute('set local session_replication_role = replica');
    await em.execute(
      `insert into study (id, organization_id, project_id, name, status, created_by_id)
       select gen_random_uuid(), ?, p, 'Loaded ' || g, 'ACTIVE', ? from unnest(array[?, ?]::uuid[]) p, generate_series(1, 3) g`,
      [org, admin.organizationUserId, opened, closed],
    );
  });
  // The recount is held up mid-count; meanwhile the open project closes and the closed one gets a member.
  const { recount, release } = await heldRecount(t, server.databaseUrl);
  t.equal((await server.put(`/api/v1/projects/${opened}`, { visibility: 'PRIVATE' }, { key: admin.key })).status, 200);
  await server.grant(closed, grantee);
  await release();
  const res = await recount;
  t.equal(res.code, 0, res.stderr);
  t.ok(res.json.passes >= 2, `a second pass corrected what moved during the first (${res.json.passes} passes)`);
  for (const [who, member, visible] of [['admin', admin, 6], ['the outsider', outsider, 0], ['the new member', grantee, 3]] as const) {
    const page = (await server.get('/api/v1/studies?size=200', { key: member.key })).body;
    t.equal(page.content.length, visible, `${who} sees ${visible} studies`);
    t.equal(page.totalElements, visible, `${who}'s total says so too`);
  }
});

t.test('two migrations started together on an empty database take turns: both succeed, each migration applied once', async (t) => {
  const fresh = await createTestDatabase(t);
  const both = await Promise.all([runCli(['migrate'], { LABDATA_DATABASE_URL: fresh }), runCli(['migrate'], { LABDATA_DATABASE_URL: fresh })]);
  for (const res of both) t.equal(res.code, 0, `exit 0 (${res.stderr.split('\n').filter((l) => l.startsWith('labdata:')).join(' ')})`);
  const applied = both.flatMap((res) => res.json?.applied ?? []);
  t.equal(new Set(applied).size, applied.length, 'no migration applied twice');
  t.ok(both.some((res) => res.json?.applied.length === 0), 'the second found nothing left to do');
});
