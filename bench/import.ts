/**
 * `npm run bench import` (`node bench/import.ts`): a Study Tracker export at a real lab's size, imported whole, then again.
 *
 * Writes the export with the tests' generator (test/plugins/study-tracker/generate.ts: every file
 * and quirk of the format) — 2,000 programs, 20,000 studies, 100,000 assays, 300,000 tasks and
 * 1,000,000+ activity rows by default — then times `labdata import study-tracker` as an operator
 * runs it (the launcher, its own process: wall time and peak RSS), a second run of the same export
 * (nothing to create), and checks that the page totals the counters keep equal count(*).
 *
 * Env: BENCH_DATABASE_URL / BENCH_POSTGRES=stock (bench/lib.ts; else an embedded PostgreSQL in a temp dir), BENCH_PROGRAMS (2000),
 * BENCH_KEEP=1 keeps the temp dir. Needs the machine to itself for figures worth comparing.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { createOrganization } from '../app/cli/admin.ts';
import { writeExport } from '../test/plugins/study-tracker/st-export.ts';
import { counts, generate, type Sizes } from '../test/plugins/study-tracker/generate.ts';
import { benchDatabase, benchDir, migratedDeployment } from './lib.ts';

const env = process.env;
const SIZES: Sizes = { programs: Number(env.BENCH_PROGRAMS ?? 2000), studiesPerProgram: 10, assaysPerStudy: 5, tasksPerAssay: 3, activityPerAssay: 10 };
const root = path.resolve(import.meta.dirname, '..');
const log = (line: string) => process.stderr.write(line + '\n');

interface Run {
  seconds: number;
  peakRssMb: number;
  report: { created: Record<string, number>; updated: Record<string, number>; unchanged: Record<string, number>; warnings: unknown[] };
}

/** Runs the launcher as an operator would; samples its peak RSS (VmHWM) while it runs. */
function importRun(args: string[], databaseUrl: string): Promise<Run> {
  return new Promise((resolve, reject) => {
    const began = performance.now();
    const child = spawn(process.execPath, [path.join(root, 'bin/labdata.js'), ...args], {
      cwd: root,
      env: { ...env, LABDATA_DATABASE_URL: databaseUrl, LABDATA_LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let peak = 0;
    const sample = setInterval(() => {
      try {
        const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'));
        if (hwm) peak = Math.max(peak, Number(hwm[1]) / 1024);
      } catch {
        // gone already
      }
    }, 100);
    child.stdout.on('data', (d) => (stdout += d));
    // Progress lines, each with the seconds since the start: where the time goes.
    child.stderr.on('data', (d) => process.stderr.write(String(d).replace(/^(?=.)/gm, () => `[${((performance.now() - began) / 1000).toFixed(1)} s] `)));
    child.on('error', reject);
    child.on('close', (code) => {
      clearInterval(sample);
      if (code !== 0) return reject(new Error(`import exited ${code}`));
      resolve({ seconds: (performance.now() - began) / 1000, peakRssMb: Math.round(peak), report: JSON.parse(stdout) });
    });
  });
}

async function main() {
  const tmp = await benchDir('import');
  const db = await benchDatabase(tmp);
  try {
    const { orm } = await migratedDeployment(tmp, db.url);
    const em = orm.em.fork();
    const org = createOrganization(em, 'Bench lab');
    await em.flush();
    await orm.close();

    const expected = counts(SIZES);
    const dir = path.join(tmp, 'data-export');
    const began = performance.now();
    await writeExport(dir, generate(SIZES), '1.0.2');
    const bytes = (await fs.readdir(dir)).reduce(async (sum, f) => (await sum) + (await fs.stat(path.join(dir, f))).size, Promise.resolve(0));
    log(`export written in ${((performance.now() - began) / 1000).toFixed(0)} s: ${JSON.stringify(expected)}, ${((await bytes) / 1e6).toFixed(0)} MB`);

    const args = ['import', 'study-tracker', dir, '--organization', org.id];
    const first = await importRun(args, db.url);
    log(`first import: ${first.seconds.toFixed(1)} s`);
    const second = await importRun(args, db.url);
    log(`second import: ${second.seconds.toFixed(1)} s`);

    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    const checks: [string, number, number][] = [];
    for (const [kind, table] of [['project', 'project'], ['study', 'study'], ['assay', 'assay'], ['activity', 'activity']]) {
      const { rows: [c] } = await client.query<{ n: string }>(`select count(*) as n from ${table} where organization_id = $1`, [org.id]);
      const { rows: [k] } = await client.query<{ n: string }>(
        `select coalesce(sum(n), 0) as n from visibility_count where organization_id = $1 and kind = $2 and actor_id = '00000000-0000-0000-0000-000000000000'`, [org.id, kind]);
      checks.push([kind, Number(c.n), Number(k.n)]);
    }
    await client.end();

    const created = first.report.created;
    const ok = (a: number, b: number) => (a === b ? 'ok' : `MISMATCH (${a} ≠ ${b})`);
    const lines = [
      '',
      '| run | wall time | peak RSS | created | unchanged |',
      '|---|---|---|---|---|',
      `| first import | ${first.seconds.toFixed(1)} s | ${first.peakRssMb} MB | projects ${created.projects}, studies ${created.studies}, assays ${created.assays}, tasks ${created.tasks}, activity ${created.activity} | 0 |`,
      `| second run (same export) | ${second.seconds.toFixed(1)} s | ${second.peakRssMb} MB | ${Object.values(second.report.created).reduce((a, b) => a + b, 0)} | activity ${second.report.unchanged.activity} |`,
      '',
      '| kind | count(*) | page total (counters) | |',
      '|---|---|---|---|',
      ...checks.map(([kind, c, k]) => `| ${kind} | ${c} | ${k} | ${ok(c, k)} |`),
      '',
      `expected: ${JSON.stringify(expected)}; created as expected: ${ok(created.projects, expected.programs)}, ${ok(created.studies, expected.studies)}, ${ok(created.assays, expected.assays)}, ${ok(created.tasks, expected.tasks)}, ${ok(created.activity, expected.activity)}`,
      `machine: ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')} (other work on the machine slows every figure)`,
    ];
    process.stdout.write(lines.join('\n') + '\n');
    if (checks.some(([, c, k]) => c !== k)) process.exitCode = 1;
  } finally {
    await db.stop();
    if (env.BENCH_KEEP !== '1') await fs.rm(tmp, { recursive: true, force: true });
  }
}

await main();
