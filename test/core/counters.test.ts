// Exact page totals from maintained counters (issue "Scale", point 2): every total in the page
// envelope equals the number of rows the caller can page through, for admins and non-admins,
// after ordinary writes, concurrent writers, visibility changes, moves, deletes and archives,
// and after a bulk SQL load followed by a recount.
import t, { type Test } from 'tap';
import { startTestServer, testCast, type Member } from '../support/server.ts';
import { recount, RecountUnsettled } from '../../app/db/recount.ts';

const server = await startTestServer(t, { plugins: ['users', 'projects', 'studies', 'assay-types', 'assays', 'activity', 'teams', 'project-access'] });
const { org, admin, alice, bob, outsider } = await testCast(server, ['Counted', 'Elsewhere']);
const teamed = await server.member(org);
const team = await server.team(org, [teamed.organizationUserId]);

const assayType = (await server.post('/api/v1/assay-types', { name: 'ELISA', status: 'ACTIVE' }, { key: admin.key })).body;
await server.post(`/api/v1/assay-types/${assayType.id}/status`, { status: 'ACTIVE' }, { key: admin.key });

async function ok<T = any>(res: Promise<{ status: number; body: T; text: string }>, expected: number[] = [200, 201, 204]): Promise<T> {
  const r = await res;
  if (!expected.includes(r.status)) throw new Error(`unexpected ${r.status}: ${r.text}`);
  return r.body;
}

const project = (who: Member, visibility: string) =>
  ok(server.post('/api/v1/projects', { code: 'C', name: `P ${visibility}`, description: 'd', visibility }, { key: who.key }));
const study = (who: Member, projectId: string) =>
  ok(server.post('/api/v1/studies', { name: 'S', description: 'd', projectId }, { key: who.key }));
const assay = (who: Member, studyId: string) =>
  ok(server.post('/api/v1/assays', { name: 'A', description: 'd', studyId, assayTypeId: assayType.id }, { key: who.key }));

/** Pages through a list (200 a page) and checks every page's totalElements against the rows seen. */
async function checkList(t: Test, who: Member, path: string, label: string) {
  const sep = path.includes('?') ? '&' : '?';
  const ids = new Set<string>();
  const totals = new Set<number>();
  for (let page = 0; ; page++) {
    const res = await server.get(`${path}${sep}size=200&page=${page}`, { key: who.key });
    if (res.status !== 200) {
      t.fail(`${label}: ${path} answered ${res.status}`);
      return;
    }
    totals.add(res.body.totalElements);
    for (const item of res.body.content) ids.add(item.id);
    if (res.body.last || res.body.content.length === 0) break;
  }
  t.same([...totals], [ids.size], `${label}: ${path} total equals the ${ids.size} rows it pages through`);
}

const callers: [Member, string][] = [[admin, 'admin'], [alice, 'alice'], [bob, 'bob'], [teamed, 'team member']];

async function checkAll(t: Test) {
  const projects = (await server.sql<{ id: string }>('select id from project where organization_id = ?', [org])).map((r) => r.id);
  const studies = (await server.sql<{ id: string }>('select id from study where organization_id = ?', [org])).map((r) => r.id);
  const assays = (await server.sql<{ id: string }>('select id from assay where organization_id = ?', [org])).map((r) => r.id);
  for (const [who, label] of callers) {
    for (const path of ['/api/v1/projects', '/api/v1/studies', '/api/v1/assays', '/api/v1/activity', '/api/v1/activity?category=RESEARCH',
      '/api/v1/activity?category=GOVERNANCE,ADMINISTRATIVE', `/api/v1/organization-users/${alice.organizationUserId}/activity`,
      `/api/v1/organization-users/${who.organizationUserId}/activity?category=RESEARCH`]) {
      await checkList(t, who, path, label);
    }
    // Per-record lists of the records this caller may view.
    for (const id of projects) {
      if ((await server.get(`/api/v1/projects/${id}`, { key: who.key })).status !== 200) continue;
      await checkList(t, who, `/api/v1/projects/${id}/studies`, label);
      await checkList(t, who, `/api/v1/projects/${id}/activity`, label);
      await checkList(t, who, `/api/v1/projects/${id}/activity?category=GOVERNANCE`, label);
    }
    for (const id of studies.slice(0, 6)) {
      if ((await server.get(`/api/v1/studies/${id}`, { key: who.key })).status !== 200) continue;
      await checkList(t, who, `/api/v1/studies/${id}/assays`, label);
      await checkList(t, who, `/api/v1/studies/${id}/activity`, label);
    }
    for (const id of assays.slice(0, 4)) {
      if ((await server.get(`/api/v1/assays/${id}`, { key: who.key })).status !== 200) continue;
      await checkList(t, who, `/api/v1/assays/${id}/activity?category=RESEARCH`, label);
    }
  }
  // Another organization's admin sees none of it.
  const res = await server.get('/api/v1/projects', { key: outsider.key });
  t.equal(res.body.totalElements, 0, 'another organization counts nothing of this one');
}

const state: { projects: any[]; studies: any[] } = { projects: [], studies: [] };

t.test('totals after ordinary writes', async (t) => {
  for (const [who, vis] of [[alice, 'PRIVATE'], [alice, 'PUBLIC'], [bob, 'PROTECTED'], [bob, 'PRIVATE'], [admin, 'PRIVATE']] as const) {
    state.projects.push(await project(who, vis));
  }
  // The team gets bob's PRIVATE project; alice gets direct access to admin's.
  await ok(server.post(`/api/v1/projects/${state.projects[3].id}/access`, { teamId: team }, { key: bob.key }));
  await ok(server.post(`/api/v1/projects/${state.projects[4].id}/access`, { organizationUserId: alice.organizationUserId }, { key: admin.key }));
  for (const p of state.projects) {
    const owner = p.createdById === alice.organizationUserId ? alice : p.createdById === bob.organizationUserId ? bob : admin;
    const s = await study(owner, p.id);
    state.studies.push(s);
    await assay(owner, s.id);
    await assay(owner, s.id);
    await ok(server.post(`/api/v1/studies/${s.id}/status`, { status: 'ON_HOLD' }, { key: owner.key }));
  }
  await checkAll(t);
});

t.test('totals after visibility changes, moves, archives and deletes', async (t) => {
  const [aPrivate, aPublic, bProtected, bPrivate] = state.projects;
  await ok(server.put(`/api/v1/projects/${aPublic.id}`, { visibility: 'PRIVATE' }, { key: alice.key }));
  await ok(server.put(`/api/v1/projects/${bProtected.id}`, { visibility: 'PUBLIC' }, { key: bob.key }));
  // alice, given access, moves her PRIVATE project's study into the (now PUBLIC) project, and an assay across.
  await ok(server.post(`/api/v1/projects/${bProtected.id}/access`, { organizationUserId: alice.organizationUserId }, { key: bob.key }));
  await ok(server.request('PATCH', `/api/v1/studies/${state.studies[0].id}/move`, { key: alice.key, body: { projectId: bProtected.id } }));
  const assays = await server.sql<{ id: string }>('select id from assay where study_id = ?', [state.studies[2].id]);
  await ok(server.request('PATCH', `/api/v1/assays/${assays[0].id}/move`, { key: bob.key, body: { studyId: state.studies[0].id } }));
  await ok(server.post(`/api/v1/projects/${aPrivate.id}/archive?archived=true`, {}, { key: alice.key }));
  await ok(server.delete(`/api/v1/projects/${bPrivate.id}`, { key: bob.key }));
  await ok(server.delete(`/api/v1/studies/${state.studies[1].id}`, { key: alice.key }));
  await checkAll(t);
});

t.test('totals stay exact under concurrent writers', async (t) => {
  const targets = await Promise.all([project(alice, 'PRIVATE'), project(bob, 'PUBLIC'), project(alice, 'PROTECTED')]);
  const studies = await Promise.all(targets.map((p, i) => study(i === 1 ? bob : alice, p.id)));
  const work: Promise<unknown>[] = [];
  for (let i = 0; i < 12; i++) {
    work.push(study(alice, targets[0].id));
    work.push(study(bob, targets[1].id).then((s) => assay(bob, s.id)));
    work.push(assay(alice, studies[2].id));
  }
  // Visibility flips and moves race the inserts above.
  work.push(server.put(`/api/v1/projects/${targets[0].id}`, { visibility: 'PROTECTED' }, { key: alice.key }));
  work.push(server.put(`/api/v1/projects/${targets[2].id}`, { visibility: 'PRIVATE' }, { key: alice.key }));
  work.push(server.request('PATCH', `/api/v1/studies/${studies[2].id}/move`, { key: alice.key, body: { projectId: targets[0].id } }));
  const results = await Promise.allSettled(work);
  t.equal(results.filter((r) => r.status === 'rejected').length, 0, 'every concurrent write succeeded');
  await checkAll(t);
});

t.test('a PRIVATE project reached through several grants counts once, as grants come and go', async (t) => {
  const p = await project(bob, 'PRIVATE');
  const s = await study(bob, p.id);
  await assay(bob, s.id);
  const team2 = await server.team(org, [teamed.organizationUserId], 'Second team');
  const grants: any[] = [];
  // Grants and writes into the project race each other.
  const writes: Promise<unknown>[] = [];
  for (const body of [{ teamId: team }, { teamId: team2 }, { organizationUserId: teamed.organizationUserId }]) {
    writes.push(ok(server.post(`/api/v1/projects/${p.id}/access`, body, { key: bob.key })).then((g) => grants.push(g)));
    writes.push(study(bob, p.id));
  }
  const failed = (await Promise.allSettled(writes)).filter((r) => r.status === 'rejected');
  t.same(failed.map((r) => String((r as PromiseRejectedResult).reason)), [], 'grants and writes all succeeded');
  await checkAll(t);
  await ok(server.put(`/api/v1/teams/${team2}`, { active: false }, { key: admin.key }));
  await checkAll(t);
  await ok(server.request('DELETE', `/api/v1/teams/${team}/users`, { key: admin.key, body: { userIds: [teamed.organizationUserId] } }));
  await checkAll(t);
  const direct = grants.find((g) => g.organizationUserId === teamed.organizationUserId);
  await ok(server.delete(`/api/v1/projects/${p.id}/access/${direct.id}`, { key: bob.key }));
  await checkAll(t);
  await ok(server.put(`/api/v1/teams/${team2}`, { active: true }, { key: admin.key }));
  await ok(server.post(`/api/v1/teams/${team}/users`, { userIds: [teamed.organizationUserId] }, { key: admin.key }));
  await ok(server.put(`/api/v1/projects/${p.id}`, { visibility: 'PROTECTED' }, { key: bob.key }));
  await ok(server.put(`/api/v1/projects/${p.id}`, { visibility: 'PRIVATE' }, { key: bob.key }));
  await checkAll(t);
});

t.test('a bulk SQL load without triggers is counted by recount; recount is idempotent', async (t) => {
  const before = (await server.get('/api/v1/projects', { key: admin.key })).body.totalElements;
  // An operator's load: rows straight into the tables, triggers off (as pg_restore can do).
  await server.orm.em.fork().transactional(async (em) => {
    await em.execute(`set local session_replication_role = replica`);
    await em.execute(
      `insert into project (id, organization_id, code, name, description, visibility, status, created_by_id)
       select gen_random_uuid(), ?, 'B' || g, 'Bulk ' || g, 'loaded', (array['PUBLIC','PROTECTED','PRIVATE'])[1 + g % 3], 'ACTIVE', ?
         from generate_series(1, 30) g`, [org, admin.organizationUserId]);
    await em.execute(
      `insert into activity (id, organization_id, event_type, category, data, date, project_id, organization_user_id)
       select gen_random_uuid(), p.organization_id, 'project.created', 'RESEARCH', '{}', now(), p.id, ?
         from project p where p.description = 'loaded'`, [bob.organizationUserId]);
  });
  const stale = (await server.get('/api/v1/projects', { key: admin.key })).body.totalElements;
  t.equal(stale, before, 'without triggers the counters did not see the load');
  await recount(server.kernel.services.counters, server.orm.em.fork());
  t.equal((await server.get('/api/v1/projects', { key: admin.key })).body.totalElements, before + 30);
  await checkAll(t);
  const counts = () => Promise.all([
    server.sql('select organization_id, kind, class, category, actor_id, sum(n)::int as n from visibility_count group by 1,2,3,4,5 order by 1,2,3,4,5'),
    server.sql('select record_id, kind, category, sum(n)::int as n from record_count group by 1,2,3 order by 1,2,3'),
    server.sql('select holder_id, kind, category, sum(n)::int as n from grant_count group by 1,2,3 having sum(n) <> 0 order by 1,2,3'),
  ]);
  const snapshot = await counts();
  await recount(server.kernel.services.counters, server.orm.em.fork());
  t.same(await counts(), snapshot, 'a second recount changes nothing');
});

t.test('recount while writers run stays exact', async (t) => {
  const p = await project(alice, 'PUBLIC');
  const writers = Array.from({ length: 10 }, () => study(alice, p.id));
  const recounting = recount(server.kernel.services.counters, server.orm.em.fork());
  const results = await Promise.allSettled([...writers, recounting]);
  t.equal(results.filter((r) => r.status === 'rejected').length, 0, 'writers wait for the recount instead of failing');
  await checkAll(t);
});

t.test('a recount whose passes never agree gives up after five, saying so, instead of looping', async (t) => {
  const { CounterService } = await import('../../core/counters/index.ts');
  const { projectCounters } = await import('../../plugins/projects/counters.ts');
  const { studyCounters } = await import('../../plugins/studies/counters.ts');
  const { assayCounters } = await import('../../plugins/assays/counters.ts');
  const counters = new CounterService();
  for (const source of [projectCounters, studyCounters, assayCounters]) counters.register(source);
  // A count that differs on every pass (a new key each time): what writers moving drifted counts
  // during every pass would cause.
  counters.register({ plugin: 'restless', statements: [`insert into record_count (record_id, kind, n) select gen_random_uuid(), 'restless', 1`] });
  const steps: string[] = [];
  const error = await recount(counters, server.orm.em.fork(), (step) => steps.push(step)).then(() => undefined, (err: unknown) => err);
  t.ok(error instanceof RecountUnsettled, `gives up: ${String(error)}`);
  t.match(String(error), /after 5 passes .*run labdata recount again/);
  t.equal(steps.filter((s) => s.startsWith('snapshot')).length, 5, 'five passes');
  await server.sql(`delete from record_count where kind = 'restless'`);
});
