/**
 * What every `npm run bench` suite shares: the database it runs on (embedded, Debian's stock
 * server, or a given URL), CPU pinning (the servers measured on one core, PostgreSQL and the load
 * generator on the other), child servers, autocannon rounds and the result table.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import { existsSync, readFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import autocannon from 'autocannon';
import pg from 'pg';
import pino from 'pino';
import type { FastifyBaseLogger } from 'fastify';
import { loadConfig } from '../app/config.ts';
import { assembleDeployment } from '../app/assemble.ts';
import { loadDeploymentPlugins } from '../app/plugins.ts';
import { createOrm, migrate } from '../core/db/orm.ts';
import { startEmbeddedDatabase } from '../app/db/embedded.ts';
import { generateSelfSignedCertificate } from '../app/tls.ts';

export const root = path.resolve(import.meta.dirname, '..');
export const log = (line: string) => process.stderr.write(line + '\n');
const env = process.env;
export const SECONDS = Number(env.BENCH_SECONDS ?? 5);
export const ROUNDS = Number(env.BENCH_ROUNDS ?? 2);
export const CONNECTIONS = Number(env.BENCH_CONNECTIONS ?? 32);

/** A throw-away directory the database's account can reach too (PostgreSQL refuses to run as root). */
export async function benchDir(name: string): Promise<string> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), `labdata-bench-${name}-`));
  await fs.chmod(dir, 0o711);
  return dir;
}

/** Every built-in plugin, assembled and migrated on `url`: the kernel (its services) and an ORM there. */
export async function migratedDeployment(dataDir: string, url: string) {
  const silent = pino({ level: 'silent' }) as unknown as FastifyBaseLogger;
  const kernel = assembleDeployment(loadConfig({ LABDATA_DATA_DIR: dataDir }), await loadDeploymentPlugins(undefined), silent);
  const orm = await createOrm({ url, entities: kernel.entities, migrations: kernel.migrations });
  await migrate(orm);
  return { kernel, orm };
}

export interface BenchDatabase {
  url: string;
  label: string;
  stop(): Promise<void>;
}

/**
 * BENCH_DATABASE_URL (an existing server, e.g. the PostgreSQL an operator runs), else
 * BENCH_POSTGRES=stock (Debian's packaged server with its default settings, started here: JIT on,
 * durable), else the embedded PostgreSQL in `dir`.
 */
export async function benchDatabase(dir: string): Promise<BenchDatabase> {
  const url = env.BENCH_DATABASE_URL ?? env.LABDATA_DATABASE_URL;
  if (url) return { url, label: 'the server at BENCH_DATABASE_URL', stop: async () => {} };
  if (env.BENCH_POSTGRES === 'stock') {
    const { startStockCluster } = await import('../test/support/stock-postgres.ts');
    const cluster = await startStockCluster(path.join(dir, 'stock'));
    const admin = new pg.Client({ connectionString: cluster.url() });
    await admin.connect();
    await admin.query('create database bench');
    await admin.end();
    return { url: cluster.url('bench'), label: 'Debian PostgreSQL (stock settings)', stop: () => cluster.stop() };
  }
  const db = await startEmbeddedDatabase(dir, () => {});
  return { ...db, label: 'embedded PostgreSQL' };
}

/** The database's server version and JIT setting, for the report. */
export async function describeServer(url: string): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query(`select split_part(version(), ' ', 2) as v, current_setting('jit') as jit`);
    return `PostgreSQL ${rows[0].v}, jit ${rows[0].jit}`;
  } finally {
    await client.end();
  }
}

/**
 * The cores: the servers measured get one (`service`), PostgreSQL and the load generator (this
 * process) the other, so CPU per request compares fairly and the load never steals the
 * server's core. Needs taskset and two cores; otherwise nothing is pinned (said in the report).
 */
export const cores = (() => {
  const n = os.cpus().length;
  const taskset = ['/usr/bin/taskset', '/bin/taskset'].find((p) => existsSync(p));
  return n >= 2 && taskset ? { taskset, service: String(n - 2), rest: String(n - 1) } : undefined;
})();

/** Pins a process and its threads to a core (a list such as "1"). */
export function pin(pid: number, core: string): void {
  if (!cores) return;
  try {
    execFileSync(cores.taskset, ['-a', '-cp', core, String(pid)], { stdio: 'ignore' });
  } catch {
    // Gone meanwhile, or not ours to pin (another user's server).
  }
}

/**
 * Pins this process (the load generator) and, when the database runs on this machine, its
 * postmaster and every backend to the `rest` core; new backends inherit it from the postmaster.
 * Returns what was pinned, for the report.
 */
export async function pinLoadAndDatabase(url: string): Promise<string> {
  if (!cores) return 'not pinned (needs taskset and 2 cores)';
  pin(process.pid, cores.rest);
  const stat = (pid: number) => readFileSync(`/proc/${pid}/stat`, 'utf8');
  const parent = (pid: number) => Number(stat(pid).slice(stat(pid).lastIndexOf(')') + 2).split(' ')[1]);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  let postmaster: number;
  try {
    // Read while the backend lives: its parent is the postmaster.
    postmaster = parent((await client.query('select pg_backend_pid() as pid')).rows[0].pid);
  } catch {
    return `load generator on core ${cores.rest}; the database is not on this machine`;
  } finally {
    await client.end();
  }
  pin(postmaster, cores.rest);
  for (const entry of await fs.readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (parent(Number(entry)) === postmaster) pin(Number(entry), cores.rest);
    } catch {
      // ended meanwhile
    }
  }
  return `servers on core ${cores.service}; PostgreSQL and the load generator on core ${cores.rest}`;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/** Starts a node child on the servers' core and resolves when it prints a line matching `ready`. */
export async function startChild(args: string[], childEnv: NodeJS.ProcessEnv, ready: RegExp): Promise<{ child: ChildProcess; line: string }> {
  const [command, argv] = cores ? [cores.taskset, ['-c', cores.service, process.execPath, ...args]] : [process.execPath, args];
  // taskset execs node: the child's pid is the server's (its CPU and memory are read from /proc).
  const child = spawn(command, argv, { cwd: root, env: childEnv, stdio: ['ignore', 'pipe', env.BENCH_VERBOSE ? 'inherit' : 'ignore'] });
  const lines = readline.createInterface({ input: child.stdout! });
  const line = await new Promise<string>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited with ${code}`)));
    lines.on('line', (l) => ready.test(l) && resolve(l));
  });
  return { child, line };
}

/**
 * Starts the service exactly as `labdata serve` runs it (the launcher gives it its memory
 * settings), on the servers' core, on `dbUrl`, with a certificate generated into `tmp`.
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

/**
 * The bare server (bench/bare.ts) on the servers' core, on `dbUrl`, with the certificate
 * `startService` wrote into `tmp`; its creates are recorded for the member in `organizationId`.
 */
export async function startBare(tmp: string, dbUrl: string, o: { organizationId: string; memberOrganizationUserId: string }) {
  const { child, line } = await startChild([path.join(root, 'bench/bare.ts')], {
    ...env,
    BENCH_DATABASE_URL: dbUrl,
    BENCH_TLS_CERT: path.join(tmp, 'cert.pem'),
    BENCH_TLS_KEY: path.join(tmp, 'key.pem'),
    BENCH_ORGANIZATION_ID: o.organizationId,
    BENCH_ACTOR_ID: o.memberOrganizationUserId,
  }, /^listening \d+/);
  return { child, base: `https://127.0.0.1:${line.split(' ')[1]}` };
}

/** utime + stime of a process, in ms (from /proc: clock ticks of 10 ms). */
export async function cpuMs(pid: number): Promise<number> {
  const stat = await fs.readFile(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

export async function peakRssMiB(pid: number): Promise<number> {
  const status = await fs.readFile(`/proc/${pid}/status`, 'utf8');
  return Math.round(Number(/VmHWM:\s+(\d+)/.exec(status)![1]) / 1024);
}

/** A request (or a rotation of requests: `paths` cycles per request) to load a server with. */
export interface Target {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  /** Paths and bodies to cycle through, one per request (e.g. a create spread over projects). */
  rotate?: { path: string; body?: string }[];
}

export interface Measure {
  requests: number;
  errors: number;
  seconds: number;
  p50: number[];
  p99: number[];
  cpuMs: number;
}

export const emptyMeasure = (): Measure => ({ requests: 0, errors: 0, seconds: 0, p50: [], p99: [], cpuMs: 0 });
export const perSecond = (m: Measure) => m.requests / m.seconds;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Waits until the database has no statement running (a round's stragglers must not overlap the next). */
export async function quiet(pool: pg.Pool): Promise<void> {
  for (let i = 0; i < 300; i++) {
    const { rows } = await pool.query(`select count(*)::int as n from pg_stat_activity where state = 'active' and pid <> pg_backend_pid() and backend_type = 'client backend'`);
    if (rows[0].n === 0) return;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** One round of load on `target`, added to `m` (with the CPU `pid` spent meanwhile). */
export async function load(monitor: pg.Pool, target: Target, pid: number, m: Measure, seconds = SECONDS): Promise<void> {
  await quiet(monitor);
  const before = await cpuMs(pid);
  let next = 0;
  const result = await autocannon({
    url: target.url,
    method: target.method ?? 'GET',
    headers: target.headers,
    body: target.body,
    connections: CONNECTIONS,
    duration: seconds,
    requests: target.rotate
      ? [{ setupRequest: (req: any) => {
        const r = target.rotate![next++ % target.rotate!.length];
        return { ...req, path: r.path, body: r.body ?? req.body };
      } }]
      : undefined,
  });
  m.cpuMs += (await cpuMs(pid)) - before;
  m.requests += result['2xx'];
  m.errors += result.non2xx + result.errors + result.timeouts;
  m.seconds += result.duration;
  m.p50.push(result.latency.p50);
  m.p99.push(result.latency.p99);
}

export interface Scenario {
  name: string;
  service: Target;
  /** The bare server's equivalent, or the name of another scenario to compare with. */
  baseline: Target | string;
}

/** Runs every scenario: a warm-up round, then ROUNDS alternating rounds (service, bare, service, bare). */
export async function runScenarios(monitor: pg.Pool, scenarios: Scenario[], pids: { service: number; bare: number }) {
  const results = new Map<string, { service: Measure; bare?: Measure }>();
  for (const sc of scenarios) {
    const r = { service: emptyMeasure(), bare: typeof sc.baseline === 'string' ? undefined : emptyMeasure() };
    results.set(sc.name, r);
    await load(monitor, sc.service, pids.service, emptyMeasure(), Math.min(SECONDS, 3)); // warm-up, not counted
    for (let round = 0; round < ROUNDS; round++) {
      await load(monitor, sc.service, pids.service, r.service);
      if (r.bare) await load(monitor, sc.baseline as Target, pids.bare, r.bare);
    }
    log(`measured ${sc.name}: ${Math.round(perSecond(r.service))} req/s${r.bare ? ` (bare ${Math.round(perSecond(r.bare))})` : ''}, service peak RSS so far ${await peakRssMiB(pids.service)} MB`);
  }
  return results;
}

/** The markdown table of a run (the README's Performance section shows one). */
export function table(scenarios: Scenario[], results: Map<string, { service: Measure; bare?: Measure }>): string[] {
  const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
  const row = (m: Measure) => `${fmt(perSecond(m))} | ${median(m.p50)} | ${median(m.p99)} | ${fmt((m.cpuMs * 1000) / Math.max(1, m.requests))}`;
  const lines = [
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
  return lines;
}
