// Durable provisioning (issue 5): records go INITIALIZING → ACTIVE / INITIALIZATION_FAILED through
// the pg-boss job queue, steps are idempotent, a failed record can be retried, a killed process
// resumes. A test plugin contributes a `probe` field to projects, studies and assays whose step
// executor behaves as each test asks and counts its "external" side effects in its own table.
import t from 'tap';
import { definePlugin, errors, Type } from '../../../core/public.ts';
import { StepFailedError, type StepContext, type ProvisioningStep, provisioning } from '../../../lib/integrations/index.ts';
import { projectExtensions } from '../../../plugins/projects/extensions.ts';
import { studyExtensions } from '../../../plugins/studies/extensions.ts';
import { assayExtensions } from '../../../plugins/assays/extensions.ts';
import { startTestServer, testCast, type Member, type TestServer } from '../../support/server.ts';
import { loadConfig } from '../../../app/config.ts';

/**
 * How the executor behaves for a probe key: fail this many runs first, fail always, hang once,
 * or wait for `gate` before finishing (so a test can look at the record while it is surely INITIALIZING).
 */
interface Behaviour {
  failures?: number;
  always?: boolean;
  permanent?: boolean;
  hangOnce?: boolean;
  gate?: Promise<void>;
}
const behaviours = new Map<string, Behaviour>();
const runs = new Map<string, number>();
let hung: (() => void) | undefined;

async function probeStep(ctx: StepContext, step: ProvisioningStep) {
  const key = String(step.payload.key);
  const b = behaviours.get(key) ?? {};
  const n = (runs.get(key) ?? 0) + 1;
  runs.set(key, n);
  // The "external system": create the thing unless an earlier run already stored its id.
  let externalId = step.result?.externalId as string | undefined;
  if (!externalId) {
    const [row] = await ctx.em.execute<{ id: string }[]>('insert into probe_effect (key) values (?) returning id::text as id', [key]);
    externalId = row.id;
    await ctx.progress({ externalId });
  }
  if (b.hangOnce && n === 1) {
    hung?.();
    await new Promise(() => {}); // never settles: the process is "killed" meanwhile
  }
  if (b.gate) await b.gate;
  if (b.permanent) throw new StepFailedError('the probe can never work');
  if (b.always || n <= (b.failures ?? 0)) throw new Error(`vendor answered 500 (run ${n})`);
  ctx.activity('probe.done', { key, externalId });
  ctx.onComplete(async (em) => {
    await em.execute('insert into probe_done (key, external_id) values (?, ?)', [key, externalId]);
  });
  return { externalId, finishedOnRun: n };
}

const ProbeSchema = Type.Object({ key: Type.String(), rollback: Type.Optional(Type.Boolean()) });
type Probe = { key: string; rollback?: boolean };

const probePlugin = definePlugin({
  name: 'probe',
  version: '1.0.0',
  dependsOn: ['projects', 'studies', 'assays'],
  migrations: [
    {
      name: 'probe-0001-init',
      sql: [
        'create table probe_effect (id bigserial primary key, key text not null)',
        'create table probe_done (key text not null, external_id text not null)',
      ],
    },
  ],
  events: { 'probe.done': 'RESEARCH' },
  setup(ctx) {
    provisioning(ctx.services).executor('probe.work', probeStep, { retryLimit: 2, retryDelaySeconds: 1 });
    for (const [kind, point] of [['project', projectExtensions], ['study', studyExtensions], ['assay', assayExtensions]] as const) {
      ctx.use(point as typeof projectExtensions).addField({
        name: 'probe',
        plugin: 'probe',
        schema: ProbeSchema,
        async save(op, record, value) {
          const probe = value as Probe;
          await provisioning(op.services).add(op, { kind, id: record.id }, { step: 'probe.work', payload: { key: probe.key } });
          // A validation failure after the step was added: the whole create rolls back, job included.
          if (probe.rollback) throw new errors.ValidationError([{ field: 'probe', message: 'rejected after queueing' }]);
        },
      });
    }
  },
});

const plugins = ['users', 'projects', 'studies', 'assay-types', 'assays', 'activity'];
const server = await startTestServer(t, { plugins, extraPlugins: [probePlugin], jobs: true });
const { admin, alice, bob, outsider } = await testCast(server, ['Acme', 'Other']);

let seq = 0;
function probe(b: Behaviour = {}, extra: Partial<Probe> = {}): Probe {
  const key = `k${++seq}`;
  behaviours.set(key, b);
  return { key, ...extra };
}

async function createProject(s: TestServer, m: Member, p: Probe, extra: Record<string, unknown> = {}) {
  return s.post('/api/v1/projects', { code: 'P', name: 'Project', description: 'd', probe: p, ...extra }, { key: m.key });
}

async function status(s: TestServer, kind: string, id: string): Promise<string> {
  const [row] = await s.sql<{ status: string }>(`select status from ${kind} where id = ?`, [id]);
  return row.status;
}

const waitStatus = (s: TestServer, kind: string, id: string, want: string) =>
  s.waitFor(async () => (await status(s, kind, id)) === want, 30_000, `${kind} ${id} to become ${want}`);

const effects = async (s: TestServer, key: string) =>
  (await s.sql<{ n: number }>('select count(*)::int as n from probe_effect where key = ?', [key]))[0].n;

const activity = (s: TestServer, projectId: string) =>
  s.sql<{ event_type: string; data: Record<string, unknown>; organization_user_id: string; study_id: string | null; assay_id: string | null }>(
    'select event_type, data, organization_user_id, study_id, assay_id from activity where project_id = ? order by date, id',
    [projectId],
  );

t.test('a create with a provisioning step answers INITIALIZING, then the record becomes ACTIVE', async (t) => {
  // The step waits for the gate: the record cannot become ACTIVE before the test has looked at it.
  let open!: () => void;
  const p = probe({ gate: new Promise<void>((resolve) => (open = resolve)) });
  const res = await createProject(server, alice, p);
  t.equal(res.status, 201);
  t.equal(res.body.status, 'INITIALIZING');
  t.equal((await server.get(`/api/v1/projects/${res.body.id}`, { key: alice.key })).body.status, 'INITIALIZING');
  open();
  await waitStatus(server, 'project', res.body.id, 'ACTIVE');
  t.equal((await server.get(`/api/v1/projects/${res.body.id}`, { key: alice.key })).body.status, 'ACTIVE');
  t.equal(await effects(server, p.key), 1, 'the external thing was created once');
  const [step] = await server.sql<{ status: string; attempts: number; result: Record<string, unknown> }>(
    'select status, attempts, result from provisioning_step where record_id = ?', [res.body.id]);
  t.match(step, { status: 'DONE', attempts: 1, result: { externalId: /\d+/, finishedOnRun: 1 } });
  t.same(await server.sql('select key from probe_done where key = ?', [p.key]), [{ key: p.key }], 'completion work ran once');
  const events = await activity(server, res.body.id);
  // Records of one transaction share a timestamp: compare them as a set.
  t.same(events.map((e) => e.event_type).sort(), ['probe.done', 'project.created', 'project.initialization_step_completed', 'project.status_changed']);
  const data = (type: string) => events.find((e) => e.event_type === type)?.data;
  t.same(data('project.status_changed'), { oldStatus: 'INITIALIZING', newStatus: 'ACTIVE' });
  t.same(data('project.initialization_step_completed'), { step: 'probe.work' });
  t.match(data('probe.done'), { key: p.key, externalId: /\d+/ });
  t.ok(events.every((e) => e.organization_user_id === alice.organizationUserId), 'background activity is recorded for the creator');
});

t.test('a create that fails after queueing leaves neither the record, nor its step, nor its job', async (t) => {
  const p = probe({}, { rollback: true });
  const before = await server.sql<{ n: number }>(`select count(*)::int as n from pgboss.job where name like 'provisioning.%'`);
  const res = await createProject(server, alice, p);
  t.equal(res.status, 400);
  t.same(res.body.errors, [{ field: 'probe', message: 'rejected after queueing' }]);
  t.same(await server.sql('select id from project where code = ? and id not in (select record_id from provisioning_step)', ['P']), []);
  t.same(await server.sql(`select id from provisioning_step where payload->>'key' = ?`, [p.key]), []);
  const after = await server.sql<{ n: number }>(`select count(*)::int as n from pgboss.job where name like 'provisioning.%'`);
  t.equal(after[0].n, before[0].n, 'no job was added');
  await server.drainJobs();
  t.equal(await effects(server, p.key), 0, 'nothing ran');
});

t.test('a vendor error is retried; the record becomes ACTIVE and nothing is created twice', async (t) => {
  const p = probe({ failures: 2 });
  const res = await createProject(server, alice, p);
  await waitStatus(server, 'project', res.body.id, 'ACTIVE');
  const [step] = await server.sql<{ attempts: number; last_error: string | null; result: Record<string, unknown> }>(
    'select attempts, last_error, result from provisioning_step where record_id = ?', [res.body.id]);
  t.equal(step.attempts, 3, 'two failed runs, then the successful one');
  t.equal(step.last_error, null);
  t.equal(step.result.finishedOnRun, 3);
  t.equal(await effects(server, p.key), 1, 'the retries reused the stored external id');
  t.notOk((await activity(server, res.body.id)).some((e) => e.event_type === 'project.initialization_failed'));
});

t.test('exhausted retries: INITIALIZATION_FAILED with an activity record naming the step and the reason', async (t) => {
  const p = probe({ always: true });
  const res = await createProject(server, alice, p);
  await waitStatus(server, 'project', res.body.id, 'INITIALIZATION_FAILED');
  const [step] = await server.sql<{ status: string; attempts: number; last_error: string }>(
    'select status, attempts, last_error from provisioning_step where record_id = ?', [res.body.id]);
  t.same(step, { status: 'FAILED', attempts: 3, last_error: 'vendor answered 500 (run 3)' }, 'the first run and retryLimit (2) retries');
  const events = await activity(server, res.body.id);
  const failed = events.filter((e) => e.event_type === 'project.initialization_failed');
  t.equal(failed.length, 1, 'recorded once');
  t.same(failed[0].data, { step: 'probe.work', reason: 'vendor answered 500 (run 3)' });
  t.same(events.filter((e) => e.event_type === 'project.status_changed').map((e) => e.data), [{ oldStatus: 'INITIALIZING', newStatus: 'INITIALIZATION_FAILED' }]);
  const [{ category }] = await server.sql<{ category: string }>(`select category from activity where event_type = 'project.initialization_failed' limit 1`);
  t.equal(category, 'RESEARCH');
  t.equal((await server.get(`/api/v1/projects/${res.body.id}`, { key: alice.key })).body.status, 'INITIALIZATION_FAILED');
});

t.test('a StepFailedError fails the record at once, without retries', async (t) => {
  const p = probe({ permanent: true });
  const res = await createProject(server, alice, p);
  await waitStatus(server, 'project', res.body.id, 'INITIALIZATION_FAILED');
  t.equal(runs.get(p.key), 1);
  const failed = (await activity(server, res.body.id)).filter((e) => e.event_type === 'project.initialization_failed');
  t.same(failed.map((e) => e.data), [{ step: 'probe.work', reason: 'the probe can never work' }]);
});

t.test('the status operation refuses changes while INITIALIZING and out of INITIALIZATION_FAILED except DEACTIVATED', async (t) => {
  hung = undefined;
  // The step holds at the gate, so the project is surely still INITIALIZING when the status changes.
  let open!: () => void;
  const pending = await createProject(server, alice, probe({ always: true, gate: new Promise<void>((resolve) => (open = resolve)) }), { visibility: 'PUBLIC' });
  const res = await server.post(`/api/v1/projects/${pending.body.id}/status`, { status: 'ACTIVE' }, { key: alice.key });
  t.equal(res.status, 400);
  t.match(res.body.details ?? res.body.message, /INITIALIZING.*ACTIVE/);
  open();
  await waitStatus(server, 'project', pending.body.id, 'INITIALIZATION_FAILED');
  for (const target of ['ACTIVE', 'INITIALIZING', 'ON_HOLD', 'COMPLETE', 'CREATED']) {
    const r = await server.post(`/api/v1/projects/${pending.body.id}/status`, { status: target }, { key: alice.key });
    t.equal(r.status, 400, `INITIALIZATION_FAILED → ${target} is refused`);
    t.match(r.text, new RegExp(`INITIALIZATION_FAILED.*${target}`), 'the message names both states');
  }
  const ok = await server.post(`/api/v1/projects/${pending.body.id}/status`, { status: 'DEACTIVATED' }, { key: alice.key });
  t.equal(ok.status, 200);
  t.equal(ok.body.status, 'DEACTIVATED');
});

t.test('INITIALIZING refuses every status change with a 400 naming both states', async (t) => {
  // Queued but never run: a server without workers keeps the record INITIALIZING.
  const idle = await startTestServer(t, { plugins, extraPlugins: [probePlugin] });
  const o = await idle.organization();
  const m = await idle.member(o);
  const res = await createProject(idle, m, probe());
  t.equal(res.body.status, 'INITIALIZING');
  for (const target of ['ACTIVE', 'DEACTIVATED', 'INITIALIZATION_FAILED']) {
    const r = await idle.post(`/api/v1/projects/${res.body.id}/status`, { status: target }, { key: m.key });
    t.equal(r.status, 400);
    t.equal(r.body.details ?? r.body.message, `A project cannot change status from INITIALIZING to ${target}`);
  }
  const retry = await idle.post(`/api/v1/projects/${res.body.id}/retry-initialization`, {}, { key: m.key });
  t.equal(retry.status, 400, 'retry only from INITIALIZATION_FAILED');
  t.match(retry.text, /from INITIALIZING to INITIALIZING/);
  t.equal(await status(idle, 'project', res.body.id), 'INITIALIZING');
});

t.test('retry-initialization reruns the failed step: INITIALIZING, then ACTIVE, without duplicates', async (t) => {
  const b: Behaviour = { always: true };
  const p = probe(b);
  const res = await createProject(server, alice, p, { visibility: 'PROTECTED' });
  const id = res.body.id;
  await waitStatus(server, 'project', id, 'INITIALIZATION_FAILED');
  const retry = (m: Member) => server.post(`/api/v1/projects/${id}/retry-initialization`, {}, { key: m.key });

  // Permission matrix: other organization 404, non-member of a PROTECTED project 403 (empty body).
  t.equal((await retry(outsider)).status, 404);
  const forbidden = await retry(bob);
  t.equal(forbidden.status, 403);
  t.equal(forbidden.text, '');
  t.equal(await status(server, 'project', id), 'INITIALIZATION_FAILED', 'refused retries change nothing');

  b.always = false; // the vendor is back
  const ok = await retry(alice);
  t.equal(ok.status, 200);
  t.equal(ok.body.status, 'INITIALIZING');
  t.equal(ok.body.id, id);
  await waitStatus(server, 'project', id, 'ACTIVE');
  t.equal(await effects(server, p.key), 1, 'the retry reused the partial result');
  const events = await activity(server, id);
  const statusChanges = events.filter((e) => e.event_type === 'project.status_changed').map((e) => e.data);
  t.same(statusChanges, [
    { oldStatus: 'INITIALIZING', newStatus: 'INITIALIZATION_FAILED' },
    { oldStatus: 'INITIALIZATION_FAILED', newStatus: 'INITIALIZING' },
    { oldStatus: 'INITIALIZING', newStatus: 'ACTIVE' },
  ]);
  const retried = events.find((e) => e.event_type === 'project.initialization_retried');
  t.same(retried?.data, { steps: ['probe.work'] });
  t.equal(retried?.organization_user_id, alice.organizationUserId);

  const again = await retry(alice);
  t.equal(again.status, 400, 'an ACTIVE project cannot retry');
  t.match(again.text, /from ACTIVE to INITIALIZING/);
});

t.test('retry-initialization: admin may retry a private project; non-members get 404', async (t) => {
  const b: Behaviour = { always: true };
  const res = await createProject(server, alice, probe(b), { visibility: 'PRIVATE' });
  await waitStatus(server, 'project', res.body.id, 'INITIALIZATION_FAILED');
  t.equal((await server.post(`/api/v1/projects/${res.body.id}/retry-initialization`, {}, { key: bob.key })).status, 404);
  t.equal((await server.post(`/api/v1/projects/00000000-0000-4000-8000-000000000000/retry-initialization`, {}, { key: alice.key })).status, 404);
  b.always = false;
  const ok = await server.post(`/api/v1/projects/${res.body.id}/retry-initialization`, {}, { key: admin.key });
  t.equal(ok.status, 200);
  await waitStatus(server, 'project', res.body.id, 'ACTIVE');
});

t.test('studies and assays are provisioned, fail and retry the same way', async (t) => {
  const project = await server.post('/api/v1/projects', { code: 'S', name: 'S', description: 'd' }, { key: alice.key });
  t.equal(project.body.status, 'ACTIVE', 'a record without steps is ACTIVE at once');
  const sb: Behaviour = { always: true };
  const study = await server.post('/api/v1/studies', { projectId: project.body.id, name: 'Study', probe: probe(sb) }, { key: alice.key });
  t.equal(study.status, 201);
  t.equal(study.body.status, 'INITIALIZING');
  await waitStatus(server, 'study', study.body.id, 'INITIALIZATION_FAILED');
  const failed = (await activity(server, project.body.id)).filter((e) => e.event_type === 'study.initialization_failed');
  t.equal(failed.length, 1);
  t.equal(failed[0].study_id, study.body.id);
  sb.always = false;
  const retried = await server.post(`/api/v1/studies/${study.body.id}/retry-initialization`, {}, { key: alice.key });
  t.equal(retried.status, 200);
  t.equal(retried.body.status, 'INITIALIZING');
  await waitStatus(server, 'study', study.body.id, 'ACTIVE');

  const type = await server.post('/api/v1/assay-types', { name: 'T ' + seq, status: 'ACTIVE' }, { key: admin.key });
  t.equal(type.status, 201, type.text);
  const ab: Behaviour = { failures: 1 };
  const assay = await server.post('/api/v1/assays', { studyId: study.body.id, assayTypeId: type.body.id, name: 'A', probe: probe(ab) }, { key: alice.key });
  t.equal(assay.status, 201, assay.text);
  t.equal(assay.body.status, 'INITIALIZING');
  await waitStatus(server, 'assay', assay.body.id, 'ACTIVE');
  const events = (await activity(server, project.body.id)).filter((e) => e.assay_id === assay.body.id);
  t.same(events.filter((e) => e.event_type === 'assay.status_changed').map((e) => e.data), [{ oldStatus: 'INITIALIZING', newStatus: 'ACTIVE' }]);
  t.equal((await server.post(`/api/v1/assays/${assay.body.id}/retry-initialization`, {}, { key: alice.key })).status, 400);
});

t.test('a record deleted while its step is queued is simply not provisioned', async (t) => {
  const idleKey = probe();
  const idle = await startTestServer(t, { plugins, extraPlugins: [probePlugin] });
  const o = await idle.organization();
  const m = await idle.member(o);
  const res = await createProject(idle, m, idleKey);
  t.equal((await idle.delete(`/api/v1/projects/${res.body.id}`, { key: m.key })).status, 204);
  await idle.startJobs();
  await idle.drainJobs();
  t.equal(await effects(idle, idleKey.key), 0);
  t.same(await idle.sql('select id from provisioning_step where record_id = ?', [res.body.id]), []);
});

t.test('a process killed mid-step resumes within a minute and completes the step exactly once', async (t) => {
  // No expiry override (a run may last 5 minutes): the dead run is found by its stale heartbeat
  // (pg-boss's shortest, 10 s; the default is 20 s).
  const s = await startTestServer(t, { plugins, extraPlugins: [probePlugin], jobs: true, jobHeartbeatSeconds: 10 });
  const o = await s.organization();
  const m = await s.member(o);
  const p = probe({ hangOnce: true });
  const started = new Promise<void>((resolve) => (hung = resolve));
  const res = await createProject(s, m, p);
  await started; // the step created its external thing and is stuck
  // "Kill" the process: the workers and their pool vanish without settling the run.
  await s.jobs.abandon();
  const [job] = await s.sql<{ state: string }>(`select state from pgboss.job where name = 'provisioning.probe.work' and data->>'stepId' = (select id::text from provisioning_step where record_id = ?)`, [res.body.id]);
  t.equal(job.state, 'active', 'the run is left active, as after a crash');
  t.equal(await status(s, 'project', res.body.id), 'INITIALIZING');

  const killedAt = Date.now();
  await s.startJobs(); // the restarted process
  await s.waitFor(async () => (await status(s, 'project', res.body.id)) === 'ACTIVE', 60_000, 'the killed run to resume within a minute');
  t.comment(`the killed run resumed and finished ${Date.now() - killedAt} ms after the kill`);
  t.equal(runs.get(p.key), 2, 'the step ran again after the restart');
  t.equal(await effects(s, p.key), 1, 'the external thing was created exactly once');
  t.same(await s.sql('select key from probe_done where key = ?', [p.key]), [{ key: p.key }]);
  const events = await activity(s, res.body.id);
  t.equal(events.filter((e) => e.event_type === 'project.initialization_step_completed').length, 1);
  t.equal(events.filter((e) => e.event_type === 'project.initialization_failed').length, 0);
});

t.test('a burst of 100 creates all become ACTIVE: workers wake on enqueue and run jobs concurrently', async (t) => {
  const started = Date.now();
  const created = await Promise.all(Array.from({ length: 100 }, () => createProject(server, alice, probe(), { code: 'BURST' })));
  t.same(created.map((r) => r.status), Array(100).fill(201));
  t.comment(`the 100 creates answered within ${Date.now() - started} ms`);
  const active = async () =>
    (await server.sql<{ n: number }>(`select count(*)::int as n from project where code = 'BURST' and status = 'ACTIVE'`))[0].n;
  // Polling once per job (the old worker) needs far longer than this bound.
  await server.waitFor(async () => (await active()) === 100, 30_000, 'the 100 projects to become ACTIVE');
  t.comment(`100 parallel creates were all ACTIVE ${Date.now() - started} ms after the first request`);
  // pg-boss marks a job completed just after its handler's transaction made the project ACTIVE.
  await server.drainJobs();
  const [jobs] = await server.sql<{ n: number }>(
    `select count(*)::int as n from pgboss.job where name = 'provisioning.probe.work' and state = 'completed' and data->>'stepId' in
       (select s.id::text from provisioning_step s join project p on p.id = s.record_id where p.code = 'BURST')`,
  );
  t.equal(jobs.n, 100, 'one job per project, each completed once');
});

t.test('jobs run concurrently, bounded by the process-wide limit and by a group (vendor) limit', async (t) => {
  // Handlers hold until the gate opens, so the number running at once can be watched.
  let running = 0;
  let peak = 0;
  let open!: () => void;
  let gate = Promise.resolve();
  const closeGate = () => (gate = new Promise<void>((resolve) => (open = resolve)));
  const groupPlugin = definePlugin({
    name: 'burst-probe',
    version: '1.0.0',
    dependsOn: ['users'],
    setup(ctx) {
      ctx.services.jobs.limit('vendor-x', 3);
      for (const [name, group] of [['burst-probe.a', 'vendor-x'], ['burst-probe.b', 'vendor-x'], ['burst-probe.c', 'vendor-y']] as const) {
        ctx.services.jobs.define('burst-probe', {
          name,
          group,
          handler: async () => {
            peak = Math.max(peak, ++running);
            await gate;
            running--;
          },
        });
      }
    },
  });
  const s = await startTestServer(t, { plugins: ['users'], extraPlugins: [groupPlugin], jobs: true, env: { LABDATA_JOB_CONCURRENCY: '4' } });
  const enqueue = (names: string[]) =>
    s.orm.em.fork().transactional(async (em) => {
      for (let i = 0; i < 12; i++) await s.kernel.services.jobs.enqueue(em, names[i % names.length], { i });
    });
  const settle = () => new Promise((r) => setTimeout(r, 500));

  closeGate();
  await enqueue(['burst-probe.a', 'burst-probe.b']);
  await s.waitFor(() => running === 3, 30_000, 'three vendor-x jobs to run at once');
  await settle();
  t.equal(peak, 3, 'the two queues of vendor-x together run 3 jobs at once, never more');
  open();
  await s.drainJobs();

  peak = 0;
  closeGate();
  await enqueue(['burst-probe.a', 'burst-probe.b', 'burst-probe.c']);
  await s.waitFor(() => running === 4, 30_000, 'four jobs to run at once');
  await settle();
  t.equal(peak, 4, 'LABDATA_JOB_CONCURRENCY=4 bounds the process over every queue');
  open();
  await s.drainJobs();

  t.throws(() => loadConfig({ LABDATA_JOB_CONCURRENCY: '0' }), /LABDATA_JOB_CONCURRENCY must be a whole number/);
  t.equal(loadConfig({}).jobConcurrency, 8, 'a sane default');
});

t.test('the retry operation is documented in OpenAPI as an extension of v1', async (t) => {
  const doc = (await server.get('/docs/api-docs/public-v1', { key: alice.key })).body;
  for (const base of ['projects', 'studies', 'assays']) {
    const op = doc?.paths?.[`/api/v1/${base}/{id}/retry-initialization`]?.post;
    t.ok(op, `${base} retry is documented`);
    t.match(op?.description, /Extension of v1/);
  }
});
