/**
 * `npm run bench`: the service next to a bare fastify + pg server at a real tenant's size.
 *
 * Seeds 100k projects, 1M activity records and ≥ 100k memberships (bench/seed.ts), starts the
 * real server (`labdata serve`) and the bare server (bench/bare.ts) as child processes on the
 * same PostgreSQL, then loads each endpoint over HTTPS with autocannon, alternating rounds
 * (service, bare, service, bare), and prints one table: req/s, p50, p99, server CPU µs per
 * request, the ratio to the bare server, and the service's peak RSS. Before loading, it checks
 * that the totals the service reports equal a plain count(*) under the permission rules.
 *
 * Loopback only; every round is bounded in time. Needs the machine to itself.
 * Env: LABDATA_DATABASE_URL (else an embedded PostgreSQL in a temp dir), BENCH_PROJECTS
 * (100000), BENCH_ACTIVITY (1000000), BENCH_MEMBER_FACTOR (1; 10 = 1M memberships),
 * BENCH_SECONDS (5 per round), BENCH_ROUNDS (2), BENCH_CONNECTIONS (32).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import { openSync } from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import autocannon from 'autocannon';
import pg from 'pg';
import pino from 'pino';
import type { FastifyBaseLogger } from 'fastify';
import { loadConfig } from '../app/config.ts';
import { createOrm, migrate } from '../core/db/orm.ts';
import { startEmbeddedDatabase } from '../app/db/embedded.ts';
import { assembleDeployment } from '../app/assemble.ts';
import { loadDeploymentPlugins as loadPlugins } from '../app/plugins.ts';
import { generateSelfSignedCertificate } from '../app/tls.ts';
import { seed } from './seed.ts';

const env = process.env;
const PROJECTS = Number(env.BENCH_PROJECTS ?? 100_000);
const ACTIVITY = Number(env.BENCH_ACTIVITY ?? 1_000_000);
const MEMBER_FACTOR = Number(env.BENCH_MEMBER_FACTOR ?? 1);
const SECONDS = Number(env.BENCH_SECONDS ?? 5);
const ROUNDS = Number(env.BENCH_ROUNDS ?? 2);
const CONNECTIONS = Number(env.BENCH_CONNECTIONS ?? 32);
const root = path.resolve(import.meta.dirname, '..');
const log = (line: string) => process.stderr.write(line + '\n');
let monitor: pg.Pool | undefined;

interface Target {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
}
interface Scenario {
  name: string;
  service: Target;
  /** The bare server's equivalent, or the name of another scenario to compare with. */
  baseline: Target | string;
}
interface Measure {
  requests: number;
  errors: number;
  seconds: number;
  p50: number[];
  p99: number[];
  cpuMs: number;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/** Starts a child and resolves when it prints a line matching `ready`. */
export async function startChild(args: string[], childEnv: NodeJS.ProcessEnv, ready: RegExp): Promise<{ child: ChildProcess; line: string }> {
  // BENCH_SERVICE_LOG: a file the children's stderr (the service's log) is appended to.
  const stderr = env.BENCH_SERVICE_LOG ? openSync(env.BENCH_SERVICE_LOG, 'a') : 'ignore';
  const child = spawn(process.execPath, args, { cwd: root, env: childEnv, stdio: ['ignore', 'pipe', stderr] });
  const lines = readline.createInterface({ input: child.stdout! });
  const line = await new Promise<string>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited with ${code}`)));
    lines.on('line', (l) => ready.test(l) && resolve(l));
  });
  return { child, line };
}

/** utime + stime of a process, in ms (from /proc: clock ticks of 10 ms). */
export async function cpuMs(pid: number): Promise<number> {
  const stat = await fs.readFile(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

async function peakRssMiB(pid: number): Promise<number> {
  const status = await fs.readFile(`/proc/${pid}/status`, 'utf8');
  return Math.round(Number(/VmHWM:\s+(\d+)/.exec(status)![1]) / 1024);
}

/** Waits until the database has no statement running (a round's stragglers must not overlap the next). */
async function quiet(pool: pg.Pool): Promise<void> {
  for (let i = 0; i < 300; i++) {
    const { rows } = await pool.query(`select count(*)::int as n from pg_stat_activity where state = 'active' and pid <> pg_backend_pid() and backend_type = 'client backend'`);
    if (rows[0].n === 0) return;
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function load(target: Target, pid: number, m: Measure): Promise<void> {
  await quiet(monitor!);
  const before = await cpuMs(pid);
  const result = await autocannon({
    url: target.url,
    method: target.method ?? 'GET',
    headers: target.headers,
    body: target.body,
    connections: CONNECTIONS,
    duration: SECONDS,
  });
  m.cpuMs += (await cpuMs(pid)) - before;
  m.requests += result['2xx'];
  m.errors += result.non2xx + result.errors + result.timeouts;
  m.seconds += result.duration;
  m.p50.push(result.latency.p50);
  m.p99.push(result.latency.p99);
}

/**
 * Starts the service exactly as `labdata serve` runs it (the launcher gives it its memory
 * settings) on `dbUrl`, with a generated certificate in `tmp` and a free port.
 */
export async function startService(tmp: string, dbUrl: string, extraEnv: NodeJS.ProcessEnv) {
  const tls = await generateSelfSignedCertificate();
  await fs.writeFile(path.join(tmp, 'cert.pem'), tls.cert);
  await fs.writeFile(path.join(tmp, 'key.pem'), tls.key, { mode: 0o600 });
  const port = await freePort();
  const { child } = await startChild([path.join(root, 'bin/labdata.js'), 'serve'], {
    ...env,
    LABDATA_DATABASE_URL: dbUrl,
    LABDATA_PORT: String(port),
    LABDATA_DATA_DIR: tmp,
    LABDATA_TLS_CERT: path.join(tmp, 'cert.pem'),
    LABDATA_TLS_KEY: path.join(tmp, 'key.pem'),
    LABDATA_SECRET_KEY: crypto.randomBytes(32).toString('base64'),
    ...extraEnv,
  }, /listening on https:/);
  return { child, tls, port };
}

const empty = (): Measure => ({ requests: 0, errors: 0, seconds: 0, p50: [], p99: [], cpuMs: 0 });
const perSecond = (m: Measure) => m.requests / m.seconds;
export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main() {
  const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'labdata-bench-'));
  await fs.chmod(tmp, 0o711);
  const children: ChildProcess[] = [];
  const db = env.LABDATA_DATABASE_URL ? { url: env.LABDATA_DATABASE_URL, stop: async () => {} } : await startEmbeddedDatabase(tmp, () => {});
  try {
    const silent = pino({ level: 'silent' }) as unknown as FastifyBaseLogger;
    const config = loadConfig({ LABDATA_DATA_DIR: tmp });
    const kernel = assembleDeployment(config, await loadPlugins(undefined), silent);
    const orm = await createOrm({ url: db.url, entities: kernel.entities, migrations: kernel.migrations });
    await migrate(orm);
    monitor = new pg.Pool({ connectionString: db.url, max: 1 });
    const began = Date.now();
    const s = await seed(orm.em.fork(), kernel.services.counters, { projects: PROJECTS, activity: ACTIVITY, memberFactor: MEMBER_FACTOR, log });
    log(`seeded in ${((Date.now() - began) / 1000).toFixed(0)} s: ${PROJECTS} projects, ${ACTIVITY} activity records, ${s.memberships} memberships`);

    const service = await startService(tmp, db.url, {
      // The bench's few keys send far more than 1,200 requests a minute: measure the limiter's
      // cost without letting it answer 429.
      LABDATA_RATE_LIMIT_PER_MINUTE: env.LABDATA_RATE_LIMIT_PER_MINUTE ?? '1000000000',
    });
    const { tls, port } = service;
    children.push(service.child);
    const bare = await startChild([path.join(root, 'bench/bare.ts')], {
      ...env,
      BENCH_DATABASE_URL: db.url,
      BENCH_TLS_CERT: path.join(tmp, 'cert.pem'),
      BENCH_TLS_KEY: path.join(tmp, 'key.pem'),
      BENCH_ORGANIZATION_ID: s.organizationId,
    }, /^listening \d+/);
    children.push(bare.child);
    const svc = `https://127.0.0.1:${port}`;
    const base = `https://127.0.0.1:${bare.line.split(' ')[1]}`;
    const member = { 'x-api-key': s.memberKey };
    const admin = { 'x-api-key': s.adminKey };

    log(`service peak RSS after start: ${await peakRssMiB(service.child.pid!)} MB`);
    await checkTotals(orm, svc, tls.cert, s);
    log(`service peak RSS after the totals check: ${await peakRssMiB(service.child.pid!)} MB`);

    const mcpBody = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_project', arguments: { id: s.projectId } } });
    const scenarios: Scenario[] = [
      { name: 'GET /projects/{id}', service: { url: `${svc}/api/v1/projects/${s.projectId}`, headers: member }, baseline: { url: `${base}/projects/${s.projectId}` } },
      { name: 'GET /projects/{id} (admin)', service: { url: `${svc}/api/v1/projects/${s.projectId}`, headers: admin }, baseline: { url: `${base}/projects/${s.projectId}` } },
      { name: 'GET /projects?size=20', service: { url: `${svc}/api/v1/projects?size=20`, headers: member }, baseline: { url: `${base}/projects` } },
      { name: 'GET /projects?size=20 (admin)', service: { url: `${svc}/api/v1/projects?size=20`, headers: admin }, baseline: { url: `${base}/projects` } },
      { name: 'GET /activity?size=20', service: { url: `${svc}/api/v1/activity?size=20`, headers: member }, baseline: { url: `${base}/activity` } },
      { name: 'GET /activity?size=20 (admin)', service: { url: `${svc}/api/v1/activity?size=20`, headers: admin }, baseline: { url: `${base}/activity` } },
      { name: 'GET /projects/{id}/activity?size=20', service: { url: `${svc}/api/v1/projects/${s.projectId}/activity?size=20`, headers: member }, baseline: { url: `${base}/projects/${s.projectId}/activity` } },
      { name: 'GET /projects/{id}/activity?size=20 (admin)', service: { url: `${svc}/api/v1/projects/${s.projectId}/activity?size=20`, headers: admin }, baseline: { url: `${base}/projects/${s.projectId}/activity` } },
      {
        name: 'MCP tools/call get_project',
        service: { url: `${svc}/mcp`, method: 'POST', body: mcpBody, headers: { ...member, 'content-type': 'application/json', accept: 'application/json, text/event-stream' } },
        baseline: 'GET /projects/{id}',
      },
    ];
    const results = new Map<string, { service: Measure; bare?: Measure }>();
    for (const sc of scenarios) {
      const r = { service: empty(), bare: typeof sc.baseline === 'string' ? undefined : empty() };
      results.set(sc.name, r);
      await load(sc.service, service.child.pid!, empty()); // warm-up round, not counted
      for (let round = 0; round < ROUNDS; round++) {
        await load(sc.service, service.child.pid!, r.service);
        if (r.bare) await load(sc.baseline as Target, bare.child.pid!, r.bare);
      }
      log(`measured ${sc.name}: ${Math.round(perSecond(r.service))} req/s, service peak RSS so far ${await peakRssMiB(service.child.pid!)} MB`);
    }
    const rss = await peakRssMiB(service.child.pid!);
    const bareRss = await peakRssMiB(bare.child.pid!);
    printTable(scenarios, results, { rss, bareRss, memberships: s.memberships });
    await orm.close();
    await monitor.end();
  } finally {
    for (const c of children) c.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));
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

function printTable(scenarios: Scenario[], results: Map<string, { service: Measure; bare?: Measure }>, extra: { rss: number; bareRss: number; memberships: number }) {
  const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
  const row = (m: Measure) => `${fmt(perSecond(m))} | ${median(m.p50)} | ${median(m.p99)} | ${fmt((m.cpuMs * 1000) / Math.max(1, m.requests))}`;
  const lines = [
    `${PROJECTS.toLocaleString('en-US')} projects, ${ACTIVITY.toLocaleString('en-US')} activity records, ${extra.memberships.toLocaleString('en-US')} memberships; ` +
      `${CONNECTIONS} connections, ${ROUNDS} alternating rounds of ${SECONDS} s, ${os.cpus().length} cores`,
    '',
    '| request (member key unless noted) | service req/s | p50 ms | p99 ms | CPU µs/req | bare req/s | p50 ms | p99 ms | CPU µs/req | ratio |',
    '|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const sc of scenarios) {
    const r = results.get(sc.name)!;
    const against = r.bare ?? results.get(sc.baseline as string)!.service;
    const ratio = (perSecond(r.service) / perSecond(against)).toFixed(2);
    const label = typeof sc.baseline === 'string' ? `(vs ${sc.baseline})` : '';
    const errors = r.service.errors + (r.bare?.errors ?? 0);
    lines.push(`| \`${sc.name}\`${errors ? ` (${errors} errors)` : ''} | ${row(r.service)} | ${r.bare ? row(r.bare) : `${label} | | |`} | ${ratio} |`);
  }
  lines.push('', `peak RSS: service ${extra.rss} MB, bare server ${extra.bareRss} MB`);
  process.stdout.write(lines.join('\n') + '\n');
}

// bench/webhooks.ts reuses the helpers above without running this bench.
if (import.meta.main) {
  await main();
  process.exit(0);
}
