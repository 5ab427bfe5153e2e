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

/**
 * The counters are kept per statement (kernel-0008, projects/studies/assays-0006): a statement
 * touching many rows adds to each counter row once. After each kind of multi-row statement, a
 * recount finds nothing to correct (every counter row equals the rows) and the totals the API
 * reports equal count(*) under the permission rules.
 */
t.test('multi-row statements with the triggers on keep every counter exact', async (t) => {
  const nil = '00000000-0000-0000-0000-000000000000';
  const exact = async (label: string) => {
    const result = await recount(server.kernel.services.counters, server.orm.em.fork());
    t.equal(result.corrected, 0, `${label}: a recount finds no counter row to correct`);
    for (const who of [admin, alice, bob]) {
      const member = who === admin ? 'true' : `(p.visibility <> 'PRIVATE' or exists (select 1 from project_member pm
        where pm.project_id = p.id and (pm.organization_user_id = '${who.organizationUserId}' or pm.team_id in
          (select tm.team_id from team_member tm join team on team.id = tm.team_id and team.active where tm.organization_user_id = '${who.organizationUserId}'))))`;
      const [counted] = await server.sql<Record<string, number>>(`select
          (select count(*)::int from project p where p.organization_id = '${org}' and ${member}) as projects,
          (select count(*)::int from study s join project p on p.id = s.project_id where s.organization_id = '${org}' and ${member}) as studies,
          (select count(*)::int from assay a join study s on s.id = a.study_id join project p on p.id = s.project_id where a.organization_id = '${org}' and ${member}) as assays`);
      for (const [path, want] of [['/api/v1/projects', counted.projects], ['/api/v1/studies', counted.studies], ['/api/v1/assays', counted.assays]] as const) {
        const res = await server.get(`${path}?size=1`, { key: who.key });
        t.equal(res.body.totalElements, want, `${label}: ${path} total of ${who === admin ? 'admin' : who === alice ? 'alice' : 'bob'} equals count(*)`);
      }
    }
  };
  const load = (text: string, params: unknown[] = []) => server.sql(text, params);

  // INSERT … SELECT: 600 projects, a grant to alice on every third, two studies each, two assays each.
  await load(`insert into project (id, organization_id, code, name, description, visibility, status, created_by_id)
    select gen_random_uuid(), ?, 'M' || g, 'Many ' || g, 'many', (array['PUBLIC','PROTECTED','PRIVATE'])[1 + g % 3], 'ACTIVE', ?
      from generate_series(1, 600) g`, [org, bob.organizationUserId]);
  await load(`insert into project_member (id, organization_id, project_id, organization_user_id)
    select gen_random_uuid(), organization_id, id, ? from project where description = 'many' and substr(code, 2)::int % 3 = 0`, [alice.organizationUserId]);
  await load(`insert into project_member (id, organization_id, project_id, team_id)
    select gen_random_uuid(), organization_id, id, ? from project where description = 'many' and substr(code, 2)::int % 5 = 0`, [team]);
  await load(`insert into study (id, organization_id, project_id, name, status, created_by_id)
    select gen_random_uuid(), p.organization_id, p.id, 'Many', 'ACTIVE', p.created_by_id from project p cross join generate_series(1, 2) where p.description = 'many'`);
  await load(`insert into assay (id, organization_id, study_id, assay_type_id, name, status, created_by_id)
    select gen_random_uuid(), s.organization_id, s.id, ?, 'Many', 'ACTIVE', s.created_by_id
      from study s join project p on p.id = s.project_id cross join generate_series(1, 2) where p.description = 'many'`, [assayType.id]);
  await load(`insert into activity (id, organization_id, event_type, category, data, date, project_id, study_id, organization_user_id)
    select gen_random_uuid(), s.organization_id, 'study.updated', (array['RESEARCH','GOVERNANCE','ADMINISTRATIVE'])[1 + g % 3], '{}',
           now() - g * interval '1 second', s.project_id, s.id, (array[?, ?, ?]::uuid[])[1 + g % 3]
      from study s join project p on p.id = s.project_id cross join generate_series(1, 8) g where p.description = 'many'`,
  [alice.organizationUserId, bob.organizationUserId, admin.organizationUserId]);
  await load(`insert into activity (id, organization_id, event_type, category, data, date, organization_user_id)
    select gen_random_uuid(), ?, 'organization.changed', 'ADMINISTRATIVE', '{}', now(), ? from generate_series(1, 50)`, [org, alice.organizationUserId]);
  await exact('after INSERT … SELECT of projects, grants, studies, assays and activity');

  // Rows loaded before the records they sit in (children first, in one transaction): adopted.
  await server.orm.em.fork().transactional(async (em) => {
    await em.execute(`create temp table ids on commit drop as
      select gen_random_uuid() as project, gen_random_uuid() as study, g from generate_series(1, 40) g`);
    await em.execute(`insert into activity (id, organization_id, event_type, category, data, date, project_id, study_id, organization_user_id)
      select gen_random_uuid(), ?, 'study.updated', 'RESEARCH', '{}', now(), project, study, ? from ids`, [org, bob.organizationUserId]);
    await em.execute(`insert into assay (id, organization_id, study_id, assay_type_id, name, status, created_by_id)
      select gen_random_uuid(), ?, study, ?, 'Early', 'ACTIVE', ? from ids cross join generate_series(1, 3)`, [org, assayType.id, bob.organizationUserId]);
    await em.execute(`insert into study (id, organization_id, project_id, name, status, created_by_id)
      select study, ?, project, 'Early', 'ACTIVE', ? from ids`, [org, bob.organizationUserId]);
    await em.execute(`insert into project (id, organization_id, code, name, description, visibility, status, created_by_id)
      select project, ?, 'E' || g, 'Early', 'early', (array['PUBLIC','PRIVATE'])[1 + g % 2], 'ACTIVE', ? from ids`, [org, bob.organizationUserId]);
  });
  await exact('after children loaded before their parents');

  // UPDATEs touching many rows: visibility of many projects, studies and assays moved, activity re-homed.
  await load(`update project set visibility = case visibility when 'PRIVATE' then 'PUBLIC' when 'PUBLIC' then 'PROTECTED' else 'PRIVATE' end
    where description = 'many' and substr(code, 2)::int % 2 = 0`);
  const [target] = await server.sql<{ id: string; study: string }>(`select p.id, (select s.id from study s where s.project_id = p.id limit 1) as study
    from project p where p.description = 'many' and p.visibility = 'PRIVATE' limit 1`);
  await load(`update study set project_id = ? where id in (select s.id from study s join project p on p.id = s.project_id
    where p.description = 'many' and substr(p.code, 2)::int % 7 = 1)`, [target.id]);
  await load(`update assay set study_id = ? where id in (select a.id from assay a join study s on s.id = a.study_id join project p on p.id = s.project_id
    where p.description = 'many' and substr(p.code, 2)::int % 11 = 2)`, [target.study]);
  await load(`update activity a set project_id = s.project_id from study s where s.id = a.study_id and a.project_id is distinct from s.project_id`);
  await load(`update activity set data = '{"touched": true}' where organization_id = ? and category = 'GOVERNANCE'`, [org]);
  await exact('after UPDATEs of many projects, studies, assays and activity rows');

  // A visibility change of a project with 10,000 activity rows, both ways.
  const [big] = await server.sql<{ id: string }>(`select id from project where description = 'many' and visibility = 'PUBLIC' limit 1`);
  await load(`insert into activity (id, organization_id, event_type, category, data, date, project_id, organization_user_id)
    select gen_random_uuid(), ?, 'project.updated', (array['RESEARCH','GOVERNANCE'])[1 + g % 2], '{}', now(), ?, (array[?, ?]::uuid[])[1 + g % 2]
      from generate_series(1, 10000) g`, [org, big.id, alice.organizationUserId, bob.organizationUserId]);
  await load(`update project set visibility = 'PRIVATE' where id = ?`, [big.id]);
  const [{ n: privateFeed }] = await server.sql<{ n: number }>(
    `select sum(n)::int as n from visibility_count where organization_id = ? and kind = 'activity' and class = 'PRIVATE' and actor_id = ?`, [org, nil]);
  t.ok(privateFeed >= 10_000, 'the project\'s activity moved to the PRIVATE class');
  await exact('after a visibility change of a project with 10,000 activity rows');
  await load(`update project set visibility = 'PROTECTED' where id = ?`, [big.id]);
  await exact('after changing it back');

  // DELETEs touching many rows: activity, assays, studies, then projects with their grants.
  await load(`delete from activity where project_id in (select id from project where description = 'many' and substr(code, 2)::int % 4 = 0)`);
  await load(`delete from assay where study_id in (select s.id from study s join project p on p.id = s.project_id where p.description = 'many' and substr(p.code, 2)::int % 3 = 1)`);
  await load(`delete from study s using project p where p.id = s.project_id and p.description = 'many' and substr(p.code, 2)::int % 3 = 1
    and not exists (select 1 from assay a where a.study_id = s.id)`);
  await server.orm.em.fork().transactional(async (em) => {
    await em.execute(`delete from project_member where project_id in (select id from project where description = 'many' and substr(code, 2)::int % 5 = 3)`);
    await em.execute(`delete from activity where project_id in (select id from project where description = 'many' and substr(code, 2)::int % 5 = 3)`);
    await em.execute(`delete from assay where study_id in (select s.id from study s join project p on p.id = s.project_id where p.description = 'many' and substr(p.code, 2)::int % 5 = 3)`);
    await em.execute(`delete from study where project_id in (select id from project where description = 'many' and substr(code, 2)::int % 5 = 3)`);
    await em.execute(`delete from project where description = 'many' and substr(code, 2)::int % 5 = 3`);
  });
  await exact('after DELETEs of many activity rows, assays, studies and projects');
});
