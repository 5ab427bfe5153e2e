// Two server instances on one database (plugins/webhooks): both sequence, fan out and send, and
// each event reaches the subscription once per attempt, never twice: claims are taken in the
// database (for update skip locked), not in either process.
import t, { type Test } from 'tap';
import { createProject, startTestServer, testCast } from '../../support/server.ts';
import { Receiver, verify } from './receiver.ts';

const plugins = ['users', 'projects', 'activity', 'webhooks'];
const env = { LABDATA_WEBHOOK_ALLOW_PRIVATE: 'true', LABDATA_WEBHOOK_RETRY_DELAYS: '0.2,0.2' };
const one = await startTestServer(t, { plugins, env, jobs: true });
const two = await startTestServer(t, { plugins, env, jobs: true, databaseUrl: one.databaseUrl });
const { admin } = await testCast(one);
const EVENTS = 30;

async function run(t: Test, answer: (attempt: number) => number) {
  const receiver = await Receiver.start(t);
  const seen = new Map<string, number>();
  receiver.answer = (r) => {
    const n = (seen.get(r.headers['webhook-id']) ?? 0) + 1;
    seen.set(r.headers['webhook-id'], n);
    return answer(n);
  };
  const hook = (await one.post('/api/v1/webhooks', { url: receiver.url, eventTypes: ['project.created'] }, { key: admin.key })).body;
  t.teardown(() => one.delete(`/api/v1/webhooks/${hook.id}`, { key: admin.key }));
  // Written through both instances at once.
  await Promise.all(Array.from({ length: EVENTS }, (_, i) => createProject(i % 2 ? one : two, admin, 'PUBLIC')));
  await one.waitFor(async () => (await one.sql(`select 1 from webhook_delivery where subscription_id = ? and status = 'DELIVERED'`, [hook.id])).length === EVENTS, 30_000, 'every delivery');
  const deliveries = await one.sql<{ id: string; attempts: number }>('select id, attempts from webhook_delivery where subscription_id = ?', [hook.id]);
  t.equal(deliveries.length, EVENTS, 'one delivery per event');
  t.ok(receiver.received.every((r) => verify(hook.secret, r)));
  return { deliveries, seen, receiver };
}


t.test('every event once: each webhook-id arrives exactly once', async (t) => {
  const { deliveries, seen, receiver } = await run(t, () => 200);
  t.equal(receiver.received.length, EVENTS);
  t.same([...seen.values()].filter((n) => n !== 1), [], 'no webhook-id twice');
  t.same(deliveries.filter((d) => d.attempts !== 1), [], 'one attempt each');
});

t.test('once per attempt: a first attempt refused, a second delivered, each arrives exactly twice', async (t) => {
  const { deliveries, seen } = await run(t, (attempt) => (attempt === 1 ? 503 : 200));
  t.equal(seen.size, EVENTS);
  t.same([...seen.values()].filter((n) => n !== 2), [], 'two requests per webhook-id, one per attempt');
  t.same(deliveries.filter((d) => d.attempts !== 2), [], 'two attempts each');
});
