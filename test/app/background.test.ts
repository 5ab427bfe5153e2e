// Background tasks (core/jobs `background`, app/jobs/background.ts): a plugin's task runs in a
// serving process until shutdown aborts its signal; a task that throws is logged and run again;
// a registration after start-up is refused.
import t from 'tap';
import pino from 'pino';
import type { FastifyBaseLogger } from 'fastify';
import { definePlugin } from '../../core/public.ts';
import { startTestServer } from '../support/server.ts';
import { BackgroundTasks } from '../../app/jobs/background.ts';

let runs = 0;
let stoppedCleanly = false;
const rows: number[] = [];

const probe = definePlugin({
  name: 'background-probe',
  version: '1.0.0',
  dependsOn: ['users'],
  setup(ctx) {
    ctx.services.jobs.background('background-probe', {
      name: 'ticker',
      async run(job) {
        runs += 1;
        // The first run fails at once: the runner must start it again.
        if (runs === 1) throw new Error('first run fails');
        while (!job.signal.aborted) {
          const [{ n }] = await job.em.fork().execute('select 1 + ? as n', [rows.length]);
          rows.push(Number(n));
          await new Promise((r) => setTimeout(r, 20));
        }
        stoppedCleanly = true;
      },
    });
  },
});

t.test('a task runs, is started again after a failure, and stops when the process stops', async (t) => {
  const server = await startTestServer(t, { plugins: ['users'], extraPlugins: [probe], jobs: true });
  await server.waitFor(() => rows.length >= 3, 10_000, 'the task to run again after its failure');
  t.equal(runs, 2, 'run once more after the failure');
  t.same(rows.slice(0, 3), [1, 2, 3], 'with a database connection');
  t.equal(server.kernel.services.jobs.tasks.length, 1);
  t.throws(() => server.kernel.services.jobs.background('late', { name: 'late', run: async () => {} }), /after start-up/, 'refused once start-up has ended');

  const background = new BackgroundTasks(server.kernel.services.jobs);
  const silent = pino({ level: 'silent' }) as unknown as FastifyBaseLogger;
  stoppedCleanly = false;
  background.start({ orm: server.orm, services: server.kernel.services, log: silent });
  await server.waitFor(() => runs === 3, 5_000, 'a second runner to start the task');
  await background.stop();
  t.ok(stoppedCleanly, 'stop() aborts the signal and waits for the task to return');
});

t.test('a server without workers runs no task', async (t) => {
  const before = runs;
  const server = await startTestServer(t, { plugins: ['users'], extraPlugins: [probe] });
  await new Promise((r) => setTimeout(r, 300));
  t.equal(runs, before);
  t.equal(server.kernel.services.jobs.tasks.length, 1, 'declared all the same');
});
