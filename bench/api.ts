/**
 * `npm run bench api`: the service next to a bare fastify + pg server at a real tenant's size.
 *
 * Seeds 100k projects, 1M activity records and ≥ 100k memberships (bench/seed.ts), starts the
 * real server (`labdata serve`, as an operator runs it) and the bare server (bench/bare.ts) as
 * child processes on the same PostgreSQL, pinned to one core while PostgreSQL and the load
 * generator share the other (bench/lib.ts), then loads each endpoint over HTTPS with autocannon,
 * alternating rounds (service, bare, service, bare), and prints one table: req/s, p50, p99,
 * server CPU µs per request, the ratio to the bare server, and the service's peak RSS. Reads
 * come first (feeds, lists, records, MCP), then creates (a study, a task, an external link,
 * spread over the member's projects; then every writer on one project). Before loading, it
 * checks that the totals the service reports equal a plain count(*) under the permission rules.
 *
 * Loopback only; every round is bounded in time. Needs the machine to itself.
 * Env: BENCH_DATABASE_URL (a server to run on; else BENCH_POSTGRES=stock for Debian's packaged
 * PostgreSQL with its default settings, started here; else the embedded PostgreSQL), BENCH_PROJECTS
 * (100000), BENCH_ACTIVITY (1000000), BENCH_REF_SHARE (0: the share of activity records naming
 * another project), BENCH_MEMBER_FACTOR (1; 10 = 1M memberships), BENCH_SECONDS
 * (5 per round), BENCH_ROUNDS (2), BENCH_CONNECTIONS (32), BENCH_ONLY (a substring of the
 * scenario names to run).
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import https from 'node:https';
import os from 'node:os';
import pg from 'pg';
import { createOrm } from '../core/db/orm.ts';
import { seed } from './seed.ts';
import { benchDatabase, CONNECTIONS, describeServer, log, peakRssMiB, pinLoadAndDatabase, ROUNDS, runScenarios, SECONDS, startService, table, type Scenario, benchDir, migratedDeployment, startBare } from './lib.ts';

const env = process.env;
const PROJECTS = Number(env.BENCH_PROJECTS ?? 100_000);
const ACTIVITY = Number(env.BENCH_ACTIVITY ?? 1_000_000);
const MEMBER_FACTOR = Number(env.BENCH_MEMBER_FACTOR ?? 1);
const REF_SHARE = Number(env.BENCH_REF_SHARE ?? 0);

async function main() {
  const tmp = await benchDir('api');
  const children: ChildProcess[] = [];
  const db = await benchDatabase(tmp);
  let monitor: pg.Pool | undefined;
  try {
    const { kernel, orm } = await migratedDeployment(tmp, db.url);
    monitor = new pg.Pool({ connectionString: db.url, max: 1 });
    const began = Date.now();
    const s = await seed(orm.em.fork(), kernel.services.counters, { projects: PROJECTS, activity: ACTIVITY, refShare: REF_SHARE, memberFactor: MEMBER_FACTOR, log });
    log(`seeded in ${((Date.now() - began) / 1000).toFixed(0)} s: ${PROJECTS} projects, ${ACTIVITY} activity records, ${s.memberships} memberships`);

    const service = await startService(tmp, db.url, {
      // The bench's few keys send far more than 1,200 requests a minute: measure the limiter's
      // cost without letting it answer 429.
      LABDATA_RATE_LIMIT_PER_MINUTE: env.LABDATA_RATE_LIMIT_PER_MINUTE ?? '1000000000',
    });
    const { tls, port } = service;
    children.push(service.child);
    const bare = await startBare(tmp, db.url, s);
    children.push(bare.child);
    const pinned = await pinLoadAndDatabase(db.url);
    const svc = `https://127.0.0.1:${port}`;
    const { base } = bare;
    const member = { 'x-api-key': s.memberKey };
    const admin = { 'x-api-key': s.adminKey };
    const json = { 'content-type': 'application/json' };

    log(`service peak RSS after start: ${await peakRssMiB(service.child.pid!)} MB`);
    await checkTotals(orm, svc, tls.cert, s);
    log(`service peak RSS after the totals check: ${await peakRssMiB(service.child.pid!)} MB`);

    const mcpBody = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_project', arguments: { id: s.projectId } } });
    // Creates spread over the member's projects (each a new row), or all on one (the contended case).
    const spread = s.memberProjects;
    const studies = (ids: string[]) => ids.map((id, i) => ({ path: '/api/v1/studies', body: JSON.stringify({ projectId: id, name: `Bench study ${i}` }) }));
    const bareStudies = (ids: string[]) => ids.map((id, i) => ({ path: '/studies', body: JSON.stringify({ projectId: id, name: `Bench study ${i}` }) }));
    const tasks = (prefix: string) => spread.map((id, i) => ({ path: `${prefix}/projects/${id}/tasks`, body: JSON.stringify({ label: `Bench task ${i}` }) }));
    const links = (prefix: string) => spread.map((id, i) => ({ path: `${prefix}/projects/${id}/external-links`, body: JSON.stringify({ label: `Link ${i}`, url: `https://example.org/${i}` }) }));
    const post = (url: string, headers: Record<string, string>, rotate: { path: string; body: string }[]) => ({ url, method: 'POST' as const, headers: { ...headers, ...json }, rotate });
    const all: Scenario[] = [
      { name: 'GET /activity?size=20', service: { url: `${svc}/api/v1/activity?size=20`, headers: member }, baseline: { url: `${base}/activity-page` } },
      { name: 'GET /activity?size=20 (admin)', service: { url: `${svc}/api/v1/activity?size=20`, headers: admin }, baseline: { url: `${base}/activity-page` } },
      { name: 'GET /projects/{id}', service: { url: `${svc}/api/v1/projects/${s.projectId}`, headers: member }, baseline: { url: `${base}/projects/${s.projectId}` } },
      { name: 'GET /projects/{id} (admin)', service: { url: `${svc}/api/v1/projects/${s.projectId}`, headers: admin }, baseline: { url: `${base}/projects/${s.projectId}` } },
      { name: 'GET /projects?size=20', service: { url: `${svc}/api/v1/projects?size=20`, headers: member }, baseline: { url: `${base}/projects` } },
      { name: 'GET /projects?size=20 (admin)', service: { url: `${svc}/api/v1/projects?size=20`, headers: admin }, baseline: { url: `${base}/projects` } },
      { name: 'GET /projects/{id}/activity?size=20', service: { url: `${svc}/api/v1/projects/${s.projectId}/activity?size=20`, headers: member }, baseline: { url: `${base}/projects/${s.projectId}/activity` } },
      { name: 'GET /projects/{id}/activity?size=20 (admin)', service: { url: `${svc}/api/v1/projects/${s.projectId}/activity?size=20`, headers: admin }, baseline: { url: `${base}/projects/${s.projectId}/activity` } },
      {
        name: 'MCP tools/call get_project',
        service: { url: `${svc}/mcp`, method: 'POST', body: mcpBody, headers: { ...member, ...json, accept: 'application/json, text/event-stream' } },
        baseline: 'GET /projects/{id}',
      },
      { name: 'POST /studies', service: post(svc, member, studies(spread)), baseline: post(base, {}, bareStudies(spread)) },
      { name: 'POST /projects/{id}/tasks', service: post(svc, member, tasks('/api/v1')), baseline: post(base, {}, tasks('')) },
      { name: 'POST /projects/{id}/external-links', service: post(svc, member, links('/api/v1')), baseline: post(base, {}, links('')) },
      { name: 'POST /studies, every writer on one project', service: post(svc, member, studies([s.projectId])), baseline: post(base, {}, bareStudies([s.projectId])) },
    ];
    const scenarios = env.BENCH_ONLY ? all.filter((sc) => sc.name.includes(env.BENCH_ONLY!)) : all;
    const results = await runScenarios(monitor, scenarios, { service: service.child.pid!, bare: bare.child.pid! });
    const rss = await peakRssMiB(service.child.pid!);
    const bareRss = await peakRssMiB(bare.child.pid!);
    process.stdout.write([
      `${PROJECTS.toLocaleString('en-US')} projects, ${ACTIVITY.toLocaleString('en-US')} activity records${REF_SHARE ? ` (${REF_SHARE * 100} % naming another project)` : ''}, ${s.memberships.toLocaleString('en-US')} memberships; ` +
        `${db.label} (${await describeServer(db.url)}); ${pinned}; ${CONNECTIONS} connections, ${ROUNDS} alternating rounds of ${SECONDS} s, ${os.cpus().length} cores`,
      '',
      ...table(scenarios, results),
      '',
      `peak RSS: service ${rss} MB, bare server ${bareRss} MB`,
    ].join('\n') + '\n');
    await orm.close();
  } finally {
    for (const c of children) c.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));
    await monitor?.end();
    await db.stop();
    await fs.rm(tmp, { recursive: true, force: true });
  }
}

/** Every total the service reports equals a plain count(*) under the permission rules. */
async function checkTotals(orm: Awaited<ReturnType<typeof createOrm>>, svc: string, ca: string, s: Awaited<ReturnType<typeof seed>>) {
  const em = orm.em.fork();
  const get = (p: string, key: string) =>
    new Promise<number>((resolve, reject) => {
      https.get(svc + p, { headers: { 'x-api-key': key }, ca }, (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => (res.statusCode === 200 ? resolve(JSON.parse(text).totalElements) : reject(new Error(`${p}: ${res.statusCode}`))));
      }).on('error', reject);
    });
  const [{ ou }] = await em.execute(`select organization_user_id as ou from api_key where id = ?`, [s.memberKey.slice(4, 24)]);
  const member = `(p.visibility in ('PUBLIC','PROTECTED') or exists (select 1 from project_member pm where pm.project_id = p.id and pm.organization_user_id = '${ou}'))`;
  const count = async (q: string) => Number((await em.execute(q))[0].n);
  const checks: [string, string, string][] = [
    ['/api/v1/projects', s.adminKey, `select count(*) n from project where organization_id = '${s.organizationId}'`],
    ['/api/v1/projects', s.memberKey, `select count(*) n from project p where p.organization_id = '${s.organizationId}' and ${member}`],
    ['/api/v1/activity', s.adminKey, `select count(*) n from activity where organization_id = '${s.organizationId}'`],
    ['/api/v1/activity', s.memberKey, `select count(*) n from activity a left join project p on p.id = a.project_id
       where a.organization_id = '${s.organizationId}' and ((a.project_id is null and a.organization_user_id = '${ou}') or (p.id is not null and ${member}))`],
    ['/api/v1/activity?category=RESEARCH', s.memberKey, `select count(*) n from activity a left join project p on p.id = a.project_id
       where a.organization_id = '${s.organizationId}' and a.category = 'RESEARCH' and ((a.project_id is null and a.organization_user_id = '${ou}') or (p.id is not null and ${member}))`],
    [`/api/v1/projects/${s.projectId}/activity`, s.memberKey, `select count(*) n from activity where project_id = '${s.projectId}'`],
  ];
  for (const [p, key, q] of checks) {
    const [got, want] = await Promise.all([get(p, key), count(q)]);
    if (got !== want) throw new Error(`total of ${p} is ${got}, count(*) says ${want}`);
    log(`total ok: ${p} (${key === s.adminKey ? 'admin' : 'member'}) = ${got}`);
  }
}

await main();
process.exit(0);
