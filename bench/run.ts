/**
 * `npm run bench [SUITE...]`: the benchmarks, each suite in a process of its own, one after the
 * other (each needs the machine to itself), each printing its table on stdout and its progress on
 * stderr. No suite named: all of them, in this order.
 *
 *   api       reads and creates beside a bare fastify + pg server, 100k projects, 1M activity (bench/api.ts)
 *   bulk      1M activity rows in one INSERT … SELECT, counter triggers on vs off + recount (bench/bulk.ts)
 *   search    search at 1.7M documents beside the plain full-text query; writes with and without it (bench/search.ts)
 *   webhooks  commit → delivery latency, a 10,000-event backlog, writes with 100 subscriptions (bench/webhooks.ts)
 *   import    a Study Tracker export of 2,000 programs and 1M activity rows, imported twice (bench/import.ts)
 *   replicas  reads on the primary alone, with a hot standby, and through PgBouncer (bench/replicas.ts)
 *
 * Each suite's header lists its settings (BENCH_* variables); BENCH_DATABASE_URL or
 * BENCH_POSTGRES=stock (Debian's PostgreSQL with its default settings) apply to all but
 * `replicas`, which starts Debian's PostgreSQL itself.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';

const SUITES = ['api', 'bulk', 'search', 'webhooks', 'import', 'replicas'];
const asked = process.argv.slice(2);
const unknown = asked.filter((s) => !SUITES.includes(s));
if (unknown.length) {
  process.stderr.write(`npm run bench: unknown suite ${unknown.join(', ')}; one or more of ${SUITES.join(', ')}\n`);
  process.exit(2);
}
let failed = 0;
for (const suite of asked.length ? asked : SUITES) {
  process.stderr.write(`== bench ${suite}\n`);
  const code = await new Promise<number>((resolve) => {
    const child = spawn(process.execPath, [path.join(import.meta.dirname, `${suite}.ts`)], { stdio: 'inherit' });
    child.on('exit', (c, signal) => resolve(c ?? (signal ? 1 : 0)));
  });
  if (code !== 0) {
    failed++;
    process.stderr.write(`bench ${suite} failed (exit ${code})\n`);
  }
}
process.exit(failed ? 1 : 0);
