/**
 * `npm run bench bulk`: a bulk write with the counter triggers on, against the operator's other
 * way in (triggers off, then `labdata recount`).
 *
 * Seeds 100k projects (bench/seed.ts, no activity), then loads BENCH_BULK_ROWS (1,000,000)
 * activity records into one organization with one INSERT … SELECT, triggers off, and counts them
 * with `labdata recount` (timed together); then the same load into another organization with
 * the triggers on, in one transaction (the counters are kept per statement: core/counters and
 * the statement-level triggers of projects-0006-counters-per-statement). A recount afterwards must find nothing to
 * correct: the counters the triggers kept equal count(*). The second load runs on the bigger
 * table, so the comparison does not favour it. Target: triggers on ≤ 3× (triggers off + recount).
 *
 * Env: BENCH_DATABASE_URL / BENCH_POSTGRES=stock (bench/lib.ts), BENCH_PROJECTS (100000),
 * BENCH_BULK_ROWS (1000000).
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import { recount } from '../app/db/recount.ts';
import { benchDatabase, describeServer, log, benchDir, migratedDeployment } from './lib.ts';
import { insertActivity, seed } from './seed.ts';

const env = process.env;
const PROJECTS = Number(env.BENCH_PROJECTS ?? 100_000);
const ROWS = Number(env.BENCH_BULK_ROWS ?? 1_000_000);

const seconds = async (run: () => Promise<unknown>) => {
  const began = process.hrtime.bigint();
  await run();
  return Number(process.hrtime.bigint() - began) / 1e9;
};

async function main() {
  const tmp = await benchDir('bulk');
  const db = await benchDatabase(tmp);
  try {
    const { kernel, orm } = await migratedDeployment(tmp, db.url);
    const s = await seed(orm.em.fork(), kernel.services.counters, { projects: PROJECTS, activity: 0, memberFactor: 1, log });
    const [, off, on] = s.organizationIds;
    const counters = kernel.services.counters;

    const offInsert = await seconds(() => orm.em.fork().transactional(async (tx) => {
      await tx.execute('set local session_replication_role = replica');
      await insertActivity(tx, off, ROWS);
    }));
    let offRecount = 0;
    const offRecountSeconds = await seconds(async () => void (offRecount = (await recount(counters, orm.em.fork())).corrected));
    log(`triggers off: insert ${offInsert.toFixed(1)} s, recount ${offRecountSeconds.toFixed(1)} s (${offRecount} corrections)`);
    await orm.em.fork().execute('vacuum analyze activity');

    const onInsert = await seconds(() => orm.em.fork().transactional((tx) => insertActivity(tx, on, ROWS)));
    log(`triggers on: insert ${onInsert.toFixed(1)} s`);
    const check = await recount(counters, orm.em.fork());
    const [{ n }] = await orm.em.fork().execute('select count(*)::int as n from activity where organization_id = ?', [on]);
    if (check.corrected !== 0 || n !== ROWS) throw new Error(`after the load with triggers on, a recount corrected ${check.corrected} counters (count(*) = ${n})`);

    const offTotal = offInsert + offRecountSeconds;
    process.stdout.write([
      `bulk bench: ${ROWS.toLocaleString('en-US')} activity records in one INSERT … SELECT beside ${PROJECTS.toLocaleString('en-US')} projects; ${db.label} (${await describeServer(db.url)}); ${os.cpus().length} cores`,
      '',
      '| load | seconds |',
      '|---|---|',
      `| triggers off (\`session_replication_role = replica\`): the insert | ${offInsert.toFixed(1)} |`,
      `| … then \`labdata recount\` | ${offRecountSeconds.toFixed(1)} |`,
      `| triggers off + recount | ${offTotal.toFixed(1)} |`,
      `| triggers on, one transaction (then a recount corrects nothing: totals equal count(*)) | ${onInsert.toFixed(1)} |`,
      `| ratio on / (off + recount), target ≤ 3 | ${(onInsert / offTotal).toFixed(2)} |`,
      '',
    ].join('\n') + '\n');
    await orm.close();
  } finally {
    await db.stop();
    await fs.rm(tmp, { recursive: true, force: true });
  }
}

await main();
process.exit(0);
