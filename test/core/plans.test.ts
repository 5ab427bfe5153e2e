// Plan guards (issue "Scale", point 5): on a seeded database of a few thousand rows, with
// sequential scans allowed, the hot reads — project get and list, study and assay lists under
// a project, the activity feeds, and the MCP get/list tools — plan no sequential scan of the
// big tables and no sub-plan that reads a whole table, and, executed, read the counter tables by
// key (pages read, counted by EXPLAIN BUFFERS). Plans and pages, not timings: no flakiness.
import t from 'tap';
import { startTestServer } from '../support/server.ts';
import { recount } from '../../app/db/recount.ts';
import { connectMcp } from '../support/mcp.ts';
import { numberedText, statementObserver, type Sql } from '../../core/db/sql.ts';

const server = await startTestServer(t, { plugins: ['users', 'projects', 'studies', 'assay-types', 'assays', 'activity', 'teams', 'project-access', 'search'] });
const org = await server.organization('Big');
const others = [await server.organization('B2'), await server.organization('B3')];
const admin = await server.admin(org);
const member = await server.member(org);
const team = await server.team(org, [member.organizationUserId]);

// A few thousand rows, spread like a real tenant: most projects in other organizations and
// other users' grants, the caller a member of every 10th project (directly or via the team).
// The first of them, in no team, reads its grants without the team paths (core/permissions `actorTeams`).
const [loner] = await Promise.all([...Array(20)].map(() => server.member(org)));
const otherUsers = await Promise.all(others.map((o) => server.member(o)));
// Loaded the way an operator bulk-loads (triggers off), then counted by a recount: the same
// rows, in a fraction of the time row-by-row triggers take.
let typeId = '';
await server.orm.em.fork().transactional(async (tx) => {
  await tx.execute('set local session_replication_role = replica');
  await tx.execute(`
    insert into project (id, organization_id, code, name, description, visibility, status, created_by_id, created_at)
    select gen_random_uuid(), o.id, 'P' || g, 'Project ' || g, 'seeded', (array['PUBLIC','PROTECTED','PRIVATE'])[1 + g % 3], 'ACTIVE', o.creator,
           now() - g * interval '1 minute'
      from generate_series(1, 4000) g
      cross join lateral (select case when g % 2 = 0 then ?::uuid when g % 4 = 1 then ?::uuid else ?::uuid end as id,
                                 case when g % 2 = 0 then ?::uuid when g % 4 = 1 then ?::uuid else ?::uuid end as creator) o`,
    [org, others[0], others[1], admin.organizationUserId, otherUsers[0].organizationUserId, otherUsers[1].organizationUserId]);
  await tx.execute(`
    insert into project_member (id, organization_id, project_id, organization_user_id)
    select gen_random_uuid(), p.organization_id, p.id, p.created_by_id from project p where p.description = 'seeded'
    on conflict do nothing`);
  await tx.execute(`
    insert into project_member (id, organization_id, project_id, organization_user_id)
    select gen_random_uuid(), p.organization_id, p.id, u.id
      from project p join organization_user u on u.organization_id = p.organization_id and u.id <> p.created_by_id and u.id <> ?
     where p.description = 'seeded' and (hashtext(p.id::text || u.id::text) % 3) = 0
    on conflict do nothing`, [member.organizationUserId]);
  await tx.execute(`
    insert into project_member (id, organization_id, project_id, organization_user_id, team_id)
    select gen_random_uuid(), ?, p.id, case when n % 2 = 0 then ?::uuid end, case when n % 2 = 1 then ?::uuid end
      from (select id, row_number() over (order by id) n from project where organization_id = ? and description = 'seeded') p
     where n % 10 = 0`, [org, member.organizationUserId, team, org]);
  await tx.execute(`
    insert into study (id, organization_id, project_id, name, status, created_by_id)
    select gen_random_uuid(), p.organization_id, p.id, 'Study', 'ACTIVE', p.created_by_id
      from project p cross join generate_series(1, 2) where p.description = 'seeded'`);
  [{ id: typeId }] = await tx.execute(
    `insert into assay_type (id, organization_id, name, status, created_by_id) values (gen_random_uuid(), ?, 'T', 'ACTIVE', ?) returning id`,
    [org, admin.organizationUserId]);
  await tx.execute(`
    insert into assay (id, organization_id, study_id, assay_type_id, name, status, created_by_id)
    select gen_random_uuid(), s.organization_id, s.id, ?, 'Assay', 'ACTIVE', s.created_by_id from study s`, [typeId]);
  await tx.execute(`
    insert into activity (id, organization_id, event_type, category, data, date, project_id, study_id, organization_user_id)
    select gen_random_uuid(), s.organization_id, 'study.created', (array['RESEARCH','GOVERNANCE'])[1 + g % 2], '{}',
           now() - (g * 86400 + abs(hashtext(s.id::text)) % 86400) * interval '1 second', s.project_id, s.id, s.created_by_id
      from study s cross join generate_series(1, 3) g`);
});
await recount(server.kernel.services.counters, server.orm.em.fork());
// Other holders' counters, as a tenant with thousands of users has them: a total that read
// grant_count whole would then show (the caller's rows are a handful of them).
await server.sql(`insert into grant_count (holder_id, kind, category, shard, n)
  select gen_random_uuid(), k, '', 0, 1 from generate_series(1, 20000) g, unnest(array['project', 'study', 'assay', 'activity']) k`);
// And other acting users' activity counters: a total that read an organization's counters
// whole (every acting user's) would read them all.
await server.sql(`insert into visibility_count (organization_id, kind, class, category, actor_id, shard, n)
  select ?, 'activity', c, cat, gen_random_uuid(), 0, 0 from generate_series(1, 10000) g,
    unnest(array['PUBLIC', 'PROTECTED', 'PRIVATE']) c, unnest(array['RESEARCH', 'GOVERNANCE']) cat`, [org]);
await server.sql('analyze');

const [target] = await server.sql<{ id: string; study: string }>(
  `select p.id, s.id as study from project p join study s on s.project_id = p.id
    where p.organization_id = ? and p.visibility = 'PRIVATE' and p.id in (select project_id from project_member where organization_user_id = ?)
    limit 1`, [org, member.organizationUserId]);
// A busy project and study: thousands of entries where the others have a handful. Their feeds must
// walk the date index and stop at the page, not sort the record's whole history (a generic plan
// sees only the average record).
// Written by the organization's users in turn, in both categories, as a busy project is.
await server.sql(`insert into activity (id, organization_id, event_type, category, data, date, project_id, study_id, organization_user_id)
  select gen_random_uuid(), ?, 'study.updated', (array['RESEARCH','GOVERNANCE'])[1 + g % 2], '{}', now() - g * interval '1 second', ?, ?,
         (select array_agg(id order by id) from organization_user where organization_id = ?)[1 + g % 20]
    from generate_series(1, 3000) g`, [org, target.id, target.study, org]);
await server.sql('analyze activity');
// The member of no team views the target too (the seeded grants may have given it already).
await server.sql(`insert into project_member (id, organization_id, project_id, organization_user_id)
  values (gen_random_uuid(), ?, ?, ?) on conflict do nothing`, [org, target.id, loner.organizationUserId]);

/** Plan nodes that read a big table whole: a sequential scan, or an index scan with no condition. */
const BIG = new Set(['project_member', 'activity', 'project', 'study', 'assay', 'search_document', 'grant_count']);
function wholeTableReads(plan: any, path: string[] = []): string[] {
  const found: string[] = [];
  const here = [...path, `${plan['Node Type']}${plan['Relation Name'] ? ' on ' + plan['Relation Name'] : ''}`];
  const rel = plan['Relation Name'];
  if (rel && BIG.has(rel)) {
    const unconditioned = ['Index Scan', 'Index Only Scan'].includes(plan['Node Type']) && !plan['Index Cond'];
    if (plan['Node Type'] === 'Seq Scan' || unconditioned) found.push(here.join(' > '));
  }
  for (const child of plan.Plans ?? []) found.push(...wholeTableReads(child, here));
  return found;
}

/**
 * Counter tables: a total reads the caller's few rows of them, found by key (a few pages per key:
 * the caller here holds grants as itself and one team), never a range of other users' rows to
 * filter (the 60,000 seeded above span hundreds of pages).
 */
const COUNTERS = new Set(['visibility_count', 'grant_count', 'record_count']);
const MAX_COUNTER_PAGES = 24;
function counterRangeReads(plan: any): string[] {
  const found: string[] = [];
  const rel = plan['Relation Name'];
  const pages = (plan['Shared Hit Blocks'] ?? 0) + (plan['Shared Read Blocks'] ?? 0);
  const loops = Math.max(plan['Actual Loops'] ?? 1, 1);
  if (rel && COUNTERS.has(rel) && pages / loops > MAX_COUNTER_PAGES) found.push(`${plan['Node Type']} on ${rel}: ${pages} pages in ${loops} loops`);
  for (const child of plan.Plans ?? []) found.push(...counterRangeReads(child));
  return found;
}

/** A page reads about its own rows of `activity`, never a record's whole history (3,000 entries above). */
const MAX_ACTIVITY_ROWS = 500;
function activityRangeReads(plan: any): string[] {
  const found: string[] = [];
  const rows = ((plan['Actual Rows'] ?? 0) + (plan['Rows Removed by Filter'] ?? 0) + (plan['Rows Removed by Index Recheck'] ?? 0));
  if (plan['Relation Name'] === 'activity' && rows > MAX_ACTIVITY_ROWS) found.push(`${plan['Node Type']} on activity: ${rows} rows a loop`);
  for (const child of plan.Plans ?? []) found.push(...activityRangeReads(child));
  return found;
}

/**
 * The plan the service runs: its statements are prepared and planned generically (core/db/orm.ts,
 * plan_cache_mode), blind to the parameters' values, so the guard asks for that plan too: it
 * prepares the statement and explains its execution on one of the service's own connections
 * (PostgreSQL 15 has no EXPLAIN (GENERIC_PLAN)); a plan made for the values at hand can hide a
 * whole-table join. With jit_above_cost at 0 every plan would be compiled where JIT is on: the
 * service's session settings (jit = off) must keep it out, also on a stock server whose JIT is on
 * by default (the embedded cluster has no JIT at all).
 */
let prepared = 0;
async function explain(q: Sql): Promise<{ plan: any; jit: unknown; executed: any }> {
  const pool = await (server.orm.em.getConnection() as any).getNativeClient();
  const client = await pool.connect();
  const name = `guard_${++prepared}`;
  try {
    await client.query('set jit_above_cost = 0');
    await client.query(`prepare ${name} as ${numberedText(q.text)}`);
    const values = q.params.map((v) => (v === null || v === undefined ? 'null' : client.escapeLiteral(v instanceof Date ? v.toISOString() : String(v))));
    const args = values.length ? `(${values.join(', ')})` : '';
    const res = await client.query(`explain (format json) execute ${name}${args}`);
    // Executed too (buffers, no timing): what a counter scan reads, in pages. JIT off for it: the
    // plan's compilation is the previous check's concern, not this one's.
    await client.query('reset jit_above_cost');
    const executed = await client.query(`explain (analyze, buffers, timing off, format json) execute ${name}${args}`);
    return { plan: res.rows[0]['QUERY PLAN'][0].Plan, jit: res.rows[0]['QUERY PLAN'][0].JIT, executed: executed.rows[0]['QUERY PLAN'][0].Plan };
  } finally {
    await client.query(`deallocate ${name}`).catch(() => undefined);
    await client.query('reset jit_above_cost');
    client.release();
  }
}

/** Runs `action` and returns every read statement it sent. */
async function statementsOf(action: () => Promise<unknown>): Promise<Sql[]> {
  const seen: Sql[] = [];
  statementObserver.observe = (q) => seen.push(q);
  try {
    await action();
  } finally {
    statementObserver.observe = undefined;
  }
  return seen.filter((q) => /^\s*(select|with)\b/i.test(q.text));
}

async function guard(t: any, label: string, action: () => Promise<unknown>) {
  const statements = await statementsOf(action);
  t.ok(statements.length > 0, `${label}: ran at least one query`);
  for (const q of statements) {
    const { plan, jit, executed } = await explain(q);
    const bad = wholeTableReads(plan);
    const text = q.text.replace(/\s+/g, ' ').slice(0, 80);
    t.same(bad, [], `${label}: no whole-table read in ${text}…`, bad.length ? { sql: q.text, plan } : {});
    const activityRows = activityRangeReads(executed);
    t.same(activityRows, [], `${label}: activity read page by page in ${text}…`, activityRows.length ? { sql: q.text, plan: executed } : {});
    const ranges = counterRangeReads(executed);
    t.same(ranges, [], `${label}: counters read by key in ${text}…`, ranges.length ? { sql: q.text, plan: executed } : {});
    t.equal(jit, undefined, `${label}: not JIT-compiled, whatever the server's thresholds: ${text}…`, jit ? { sql: q.text, jit } : {});
  }
}

const ok = async (p: Promise<{ status: number; text: string }>) => {
  const r = await p;
  if (r.status !== 200) throw new Error(`${r.status} ${r.text}`);
};

for (const [who, label] of [[member, 'member of a team'], [loner, 'member of no team'], [admin, 'admin']] as const) {
  t.test(`REST hot reads plan on indexes (${label})`, async (t) => {
    await guard(t, 'project get', () => ok(server.get(`/api/v1/projects/${target.id}`, { key: who.key })));
    await guard(t, 'project list', () => ok(server.get('/api/v1/projects?size=20', { key: who.key })));
    await guard(t, 'project list sorted by name', () => ok(server.get('/api/v1/projects?size=20&sort=name,asc', { key: who.key })));
    await guard(t, 'studies of a project', () => ok(server.get(`/api/v1/projects/${target.id}/studies`, { key: who.key })));
    await guard(t, 'assays of a study', () => ok(server.get(`/api/v1/studies/${target.study}/assays`, { key: who.key })));
    await guard(t, 'study list', () => ok(server.get('/api/v1/studies?size=20', { key: who.key })));
    await guard(t, 'assay list', () => ok(server.get('/api/v1/assays?size=20', { key: who.key })));
    // Every sortable field, both ways: a page walks an index, never a sort of the tenant.
    for (const [path, fields] of [
      ['/api/v1/projects', ['updatedAt', 'status', 'visibility', 'code']],
      ['/api/v1/studies', ['updatedAt', 'name', 'status', 'startDate']],
      ['/api/v1/assays', ['updatedAt', 'name', 'status', 'startDate']],
    ] as const) {
      for (const field of fields) {
        for (const direction of ['asc', 'desc']) {
          await guard(t, `${path} sorted by ${field},${direction}`, () => ok(server.get(`${path}?size=20&sort=${field},${direction}`, { key: who.key })));
        }
      }
    }
    await guard(t, 'organization feed', () => ok(server.get('/api/v1/activity?size=20', { key: who.key })));
    await guard(t, 'organization feed by category', () => ok(server.get('/api/v1/activity?size=20&category=GOVERNANCE', { key: who.key })));
    await guard(t, 'project feed', () => ok(server.get(`/api/v1/projects/${target.id}/activity?size=20`, { key: who.key })));
    await guard(t, 'study feed', () => ok(server.get(`/api/v1/studies/${target.study}/activity?size=20`, { key: who.key })));
    await guard(t, 'user feed', () => ok(server.get(`/api/v1/organization-users/${member.organizationUserId}/activity?size=20`, { key: who.key })));
    // Search (plugins/search): words through the GIN index, codes through the code index, the
    // page's titles and snippets by id; the documents were written by the recount's repairs.
    await guard(t, 'search by a word', () => ok(server.get('/api/v1/search?q=study', { key: who.key })));
    await guard(t, 'search by words, narrowed', () => ok(server.get('/api/v1/search?q=assay%20-project&types=assay&archived=true&page=2', { key: who.key })));
    await guard(t, 'search by a code prefix', () => ok(server.get('/api/v1/search?q=P12', { key: who.key })));
  });
}

t.test('MCP get/list tools plan on indexes', async (t) => {
  const client = await connectMcp(server.url, { key: member.key, teardown: (fn) => t.teardown(fn) });
  const call = async (name: string, args: Record<string, unknown>) => {
    const res: any = await client.callTool({ name, arguments: args });
    if (res.isError) throw new Error(`${name}: ${JSON.stringify(res.content)}`);
  };
  await guard(t, 'get_project', () => call('get_project', { id: target.id }));
  await guard(t, 'list_projects', () => call('list_projects', { size: 20 }));
  await guard(t, 'list_studies_by_project', () => call('list_studies_by_project', { projectId: target.id }));
  await guard(t, 'list_activities', () => call('list_activities', { size: 20 }));
  await guard(t, 'list_activities_by_project', () => call('list_activities_by_project', { id: target.id }));
  await guard(t, 'search', () => call('search', { query: 'Project P1', size: 50 }));
});
