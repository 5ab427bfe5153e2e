/**
 * `npm run bench replicas`: reads with the primary alone, with the primary and one hot standby
 * (LABDATA_DATABASE_READ_URLS), and through PgBouncer in transaction mode
 * (LABDATA_DATABASE_POOLER=transaction), at a real tenant's size.
 *
 * Starts Debian's PostgreSQL 15 as the tests do (test/support/replication.ts: a primary, a
 * standby from `pg_basebackup -R`, PgBouncer from docs/operations.md's pgbouncer.ini), seeds the
 * primary (bench/seed.ts: 100k projects, 1M activity records), takes the standby once seeded, and
 * starts three services (`labdata serve`) on the one core the servers get, the databases,
 * PgBouncer and the load generator sharing the other (bench/lib.ts). Each read is loaded on the
 * three in turn (A B C, BENCH_ROUNDS times), and the table gives req/s, p99, CPU per request of
 * the service and of the database side (every postgres and pgbouncer process), and the ratio
 * to the primary alone. On two cores the standby cannot add a core, so the ratio says what
 * routing a read costs, not what a second server gains; the pooler's row is what it costs per
 * request. Needs the machine to itself.
 *
 * Env: BENCH_PROJECTS (100000), BENCH_ACTIVITY (1000000), BENCH_SECONDS, BENCH_ROUNDS,
 * BENCH_CONNECTIONS (bench/lib.ts).
 */
import fs from 'node:fs/promises';
import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import pg from 'pg';
import { createDatabase, startPgbouncer, startPrimary, startStandby } from '../test/support/replication.ts';
import { cores, describeServer, pin, emptyMeasure, load, log, perSecond, pinLoadAndDatabase, ROUNDS, SECONDS, startService, type Measure, CONNECTIONS, migratedDeployment } from './lib.ts';
import { seed } from './seed.ts';

const env = process.env;
const PROJECTS = Number(env.BENCH_PROJECTS ?? 100_000);
const ACTIVITY = Number(env.BENCH_ACTIVITY ?? 1_000_000);

/** The pids of the processes whose name matches `name` (postgres, pgbouncer). */
function processesNamed(name: RegExp): number[] {
  return readdirSync('/proc').filter((p) => /^\d+$/.test(p)).filter((p) => {
    try {
      return name.test(readFileSync(`/proc/${p}/comm`, 'utf8'));
    } catch {
      return false; // ended meanwhile
    }
  }).map(Number);
}

/**
 * CPU (ms) of the database side: every postgres and pgbouncer process, with the CPU of the
 * children a postmaster has reaped (a backend that exits between two readings keeps counting).
 */
function databaseCpuMs(): number {
  let total = 0;
  for (const p of processesNamed(/^(postgres|pgbouncer)/)) {
    try {
      const stat = readFileSync(`/proc/${p}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      total += (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) * 10;
    } catch {
      // ended meanwhile
    }
  }
  return total;
}

async function main() {
  const teardowns: (() => unknown)[] = [];
  const t = { teardown: (fn: () => unknown) => void teardowns.push(fn) };
  const children: ChildProcess[] = [];
  let monitor: pg.Pool | undefined;
  try {
    const primary = await startPrimary(t);
    await createDatabase(primary, 'bench');
    const url = primary.url('bench');
    const tmp = path.join(primary.work, 'services');
    await fs.mkdir(tmp, { mode: 0o711 });
    const { kernel, orm } = await migratedDeployment(tmp, url);
    const s = await seed(orm.em.fork(), kernel.services.counters, { projects: PROJECTS, activity: ACTIVITY, memberFactor: 1, log });
    await orm.close();
    const standby = await startStandby(t, primary);
    await standby.caughtUp();
    const bouncer = await startPgbouncer(t, primary);
    log('primary, standby and pgbouncer up');

    const limits = { LABDATA_RATE_LIMIT_PER_MINUTE: '1000000000' };
    const start = async (name: string, extra: NodeJS.ProcessEnv) => {
      const dir = path.join(tmp, name);
      await fs.mkdir(dir, { mode: 0o711 });
      const svc = await startService(dir, extra.LABDATA_DATABASE_URL ?? url, { ...limits, ...extra });
      children.push(svc.child);
      return { name, pid: svc.child.pid!, base: `https://127.0.0.1:${svc.port}` };
    };
    const configs = [
      await start('primary alone', {}),
      await start('primary + 1 standby', { LABDATA_DATABASE_READ_URLS: standby.url('bench') }),
      await start('through PgBouncer (transaction mode)', { LABDATA_DATABASE_URL: bouncer.url('bench'), LABDATA_DATABASE_DIRECT_URL: url, LABDATA_DATABASE_POOLER: 'transaction' }),
    ];
    const pinned = await pinLoadAndDatabase(standby.url('bench'));
    await pinLoadAndDatabase(url);
    if (cores) for (const p of processesNamed(/^pgbouncer/)) pin(p, cores.rest);
    monitor = new pg.Pool({ connectionString: url, max: 1 });

    const member = { 'x-api-key': s.memberKey };
    const reads = [
      { name: 'GET /projects/{id}', path: `/api/v1/projects/${s.projectId}` },
      { name: 'GET /projects?size=20', path: '/api/v1/projects?size=20' },
      { name: 'GET /activity?size=20', path: '/api/v1/activity?size=20' },
      { name: 'GET /projects/{id}/activity?size=20', path: `/api/v1/projects/${s.projectId}/activity?size=20` },
    ];
    const rows: string[] = [];
    for (const read of reads) {
      const measures = configs.map(() => ({ m: emptyMeasure() as Measure, db: 0 }));
      for (const c of configs) await load(monitor, { url: c.base + read.path, headers: member }, c.pid, emptyMeasure(), Math.min(SECONDS, 3));
      for (let round = 0; round < ROUNDS; round++) {
        for (const [i, c] of configs.entries()) {
          const before = databaseCpuMs();
          await load(monitor, { url: c.base + read.path, headers: member }, c.pid, measures[i].m);
          measures[i].db += databaseCpuMs() - before;
        }
      }
      const base = perSecond(measures[0].m);
      for (const [i, c] of configs.entries()) {
        const { m, db } = measures[i];
        const per = (ms: number) => Math.round((ms * 1000) / Math.max(1, m.requests)).toLocaleString('en-US');
        const p99 = [...m.p99].sort((a, b) => a - b)[Math.floor(m.p99.length / 2)];
        rows.push(`| \`${read.name}\`${m.errors ? ` (${m.errors} errors)` : ''} | ${c.name} | ${Math.round(perSecond(m)).toLocaleString('en-US')} | ${p99} | ${per(m.cpuMs)} | ${per(db)} | ${(perSecond(m) / base).toFixed(2)} |`);
      }
      log(`measured ${read.name}`);
    }
    process.stdout.write([
      `replicas bench: ${PROJECTS.toLocaleString('en-US')} projects, ${ACTIVITY.toLocaleString('en-US')} activity records; ${await describeServer(url)}, a streaming standby, pgbouncer in transaction mode; ${pinned}; ${CONNECTIONS} connections, ${ROUNDS} rounds of ${SECONDS} s (A B C), ${os.cpus().length} cores; member key`,
      '',
      '| read | database | req/s | p99 ms | service CPU µs/req | database CPU µs/req | ratio to the primary alone |',
      '|---|---|---|---|---|---|---|',
      ...rows,
      '',
    ].join('\n') + '\n');
  } finally {
    for (const c of children) c.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 1000));
    await monitor?.end();
    for (const fn of teardowns.reverse()) await fn();
  }
}

await main();
process.exit(0);
