// The job queue (core/jobs, pg-boss): a job exists iff its transaction commits; handlers retry
// with the definition's policy; exhausted retries call onFailed once; `labdata migrate` installs
// pg-boss's schema.
import t from 'tap';
import { definePlugin } from '../../core/public.ts';
import { createTestDatabase } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import { runCliInProcess } from '../cli/labdata-cli.ts';
import { JobQueue } from '../../core/jobs/index.ts';
import { JobRunner } from '../../app/jobs/runner.ts';

const seen: { name: string; n: number; attempt: number }[] = [];
const failed: { n: number; reason: string }[] = [];
let failTimes = 0;

const jobsPlugin = definePlugin({
  name: 'jobs-probe',
  version: '1.0.0',
  dependsOn: ['users'],
  setup(ctx) {
    ctx.services.jobs.define<{ n: number }>('jobs-probe', {
      name: 'jobs-probe.echo',
      retryLimit: 3,
      retryDelaySeconds: 4,
      retryBackoff: true,
      async handler(job, payload) {
        seen.push({ name: 'echo', n: payload.n, attempt: job.attempt });
        if (job.attempt <= failTimes) throw new Error(`flaky ${job.attempt}`);
      },
      async onFailed(_job, payload, reason) {
        failed.push({ n: payload.n, reason });
      },
    });
  },
});

const server = await startTestServer(t, { plugins: ['users'], extraPlugins: [jobsPlugin], jobs: true });
const { jobs } = server.kernel.services;

const jobRows = (n: number) =>
  server.sql<{ state: string; retry_limit: number; retry_delay: number; retry_backoff: boolean; heartbeat_seconds: number | null }>(
    `select state, retry_limit, retry_delay, retry_backoff, heartbeat_seconds from pgboss.job where name = 'jobs-probe.echo' and (data->>'n')::int = ?`,
    [n],
  );

t.test('a job enqueued in a transaction that rolls back does not exist; a committed one runs', async (t) => {
  await t.rejects(
    server.orm.em.fork().transactional(async (em) => {
      await jobs.enqueue(em, 'jobs-probe.echo', { n: 1 });
      throw new Error('roll back');
    }),
    /roll back/,
  );
  t.same(await jobRows(1), [], 'no job row');
  await server.orm.em.fork().transactional((em) => jobs.enqueue(em, 'jobs-probe.echo', { n: 2 }));
  await server.drainJobs();
  t.same(seen.filter((s) => s.n === 2).map((s) => s.attempt), [1]);
  t.same(seen.filter((s) => s.n === 1), [], 'the rolled-back job never ran');
});

t.test('enqueue outside a transaction is refused; an undefined job name too', async (t) => {
  await t.rejects(jobs.enqueue(server.orm.em.fork(), 'jobs-probe.echo', { n: 3 }), /inside the write transaction/);
  await t.rejects(server.orm.em.fork().transactional((em) => jobs.enqueue(em, 'nope', {})), /not defined/);
});

t.test('a failing handler is retried with the definition policy, then succeeds', async (t) => {
  failTimes = 2;
  await server.orm.em.fork().transactional((em) => jobs.enqueue(em, 'jobs-probe.echo', { n: 4 }));
  await server.drainJobs();
  t.same(seen.filter((s) => s.n === 4).map((s) => s.attempt), [1, 2, 3]);
  const [row] = await jobRows(4);
  t.equal(row.state, 'completed');
  t.equal(row.retry_limit, 3);
  t.same(failed, []);
});

t.test('exhausted retries call onFailed once with the last reason', async (t) => {
  failTimes = 99;
  await server.orm.em.fork().transactional((em) => jobs.enqueue(em, 'jobs-probe.echo', { n: 5 }));
  await server.drainJobs();
  t.same(seen.filter((s) => s.n === 5).map((s) => s.attempt), [1, 2, 3, 4], 'the first run and 3 retries');
  t.same(failed, [{ n: 5, reason: 'flaky 4' }]);
  failTimes = 0;
});

t.test('outside tests, retries wait with exponential backoff from the definition delay', async (t) => {
  // A second queue on the same database, with the production delay scale: only the job row is checked.
  const queue = new JobQueue();
  queue.define('jobs-probe', { name: 'jobs-probe.echo', retryLimit: 3, retryDelaySeconds: 4, handler: async () => {} });
  const runner = new JobRunner(queue);
  await runner.start({ url: server.databaseUrl, orm: server.orm, services: server.kernel.services, log: server.app.log, workers: false });
  t.teardown(() => runner.stop());
  await server.orm.em.fork().transactional((em) => queue.enqueue(em, 'jobs-probe.echo', { n: 6 }, { startAfterSeconds: 3600 }));
  const [row] = await jobRows(6);
  // A run whose process died is retried 20 s after its last heartbeat (plus a 15 s sweep): within a minute.
  t.same(row, { state: 'created', retry_limit: 3, retry_delay: 4, retry_backoff: true, heartbeat_seconds: 20 });
});

t.test('labdata migrate installs the job queue schema (pg-boss) when a plugin defines jobs', async (t) => {
  const databaseUrl = await createTestDatabase(t);
  const res = await runCliInProcess(['migrate'], { LABDATA_DATABASE_URL: databaseUrl, LABDATA_PLUGINS: 'users,projects,./test/fixtures/plugins/job-fixture/index.ts' });
  t.equal(res.code, 0, res.stderr);
  const s = await startTestServer(t, { databaseUrl, plugins: ['users'] });
  const [row] = await s.sql<{ n: number }>(`select count(*)::int as n from information_schema.tables where table_schema = 'pgboss' and table_name = 'job'`);
  t.equal(row.n, 1);
  const queues = await s.sql<{ name: string }>(`select name from pgboss.queue order by name`);
  t.same(queues.map((q) => q.name), ['job-fixture.noop', 'job-fixture.noop.failed']);
});
