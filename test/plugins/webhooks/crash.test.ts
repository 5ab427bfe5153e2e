// Nothing lost (plugins/webhooks): `kill -9` of a real `labdata serve` while events are written
// (through it and beside it) and delivered, one attempt held in flight at the moment of the kill;
// after a restart every committed event reaches the subscription, at least once, and nothing
// arrives for a write that did not commit.
import t from 'tap';
import { startTestServer, testCast, TEST_SECRET_KEY, type Member } from '../../support/server.ts';
import { dataDir, serve, stop } from '../../support/serve-process.ts';
import { Receiver, verify } from './receiver.ts';

const plugins = ['users', 'projects', 'activity', 'webhooks'];
// The database's owner and a second writer; it runs no background task: only `labdata serve` delivers.
const env = { LABDATA_WEBHOOK_ALLOW_PRIVATE: 'true', LABDATA_WEBHOOK_RETRY_DELAYS: '0.2,0.2,0.2,0.2,0.2,0.2' };
const server = await startTestServer(t, { plugins, env });
const { admin } = await testCast(server);

function serveEnv(): Record<string, string | undefined> {
  return {
    LABDATA_DATABASE_URL: server.databaseUrl,
    LABDATA_DATA_DIR: dataDir(t),
    LABDATA_PLUGINS: plugins.join(','),
    LABDATA_SECRET_KEY: TEST_SECRET_KEY,
    LABDATA_TLS_CERT: process.env.LABDATA_TEST_TLS_CERT,
    LABDATA_TLS_KEY: process.env.LABDATA_TEST_TLS_KEY,
    LABDATA_LOG_LEVEL: 'warn',
    ...env,
  };
}

/** A project created through `base` (the spawned server, or the test server); false when the request failed. */
async function write(base: string, m: Member, i: number): Promise<boolean> {
  try {
    const res = await fetch(`${base}/api/v1/projects`, {
      method: 'POST',
      headers: { 'x-api-key': m.key, 'content-type': 'application/json' },
      body: JSON.stringify({ code: `K-${i}`, name: `Kill ${i}`, description: 'd', visibility: 'PUBLIC' }),
    });
    return res.status === 201;
  } catch {
    return false;
  }
}

t.test('kill -9 while writing and delivering, then a restart: every committed event arrives, none of a write that did not commit', async (t) => {
  const receiver = await Receiver.start(t);
  let release: (() => void) | undefined;
  const held = new Promise<void>((resolve) => (release = resolve));
  let holding = false;
  receiver.answer = async () => {
    // The 10th request is held unanswered: that attempt is in flight when the process dies.
    if (receiver.received.length === 10) {
      holding = true;
      await held;
    }
    return 200;
  };
  const created = await server.post('/api/v1/webhooks', { url: receiver.url, eventTypes: ['project.created'] }, { key: admin.key });
  t.equal(created.status, 201);
  const hook = created.body;
  // A second subscription matching the same events by another filter: every matching one gets them.
  const other = await Receiver.start(t);
  const second0 = await server.post('/api/v1/webhooks', { url: other.url, categories: ['RESEARCH'] }, { key: admin.key });
  t.equal(second0.status, 201);

  const first = await serve(t, serveEnv());
  let i = 0;
  let writing = true;
  t.teardown(() => (writing = false));
  const writer = (async () => {
    while (writing) {
      i++;
      await write(i % 2 ? `https://localhost:${first.port}` : server.url, admin, i);
    }
  })();
  // And 30 writes in (15 of them through the instance that stays up, so at least 15 commit).
  await receiver.waitFor(() => holding && receiver.received.length >= 10 && i >= 30, 30_000, 'deliveries under way, one held');
  await stop(first, 'SIGKILL');
  // Written while no instance runs: they wait in the outbox.
  const more = i + 5;
  while (i < more) await new Promise((r) => setTimeout(r, 10));
  writing = false;
  await writer;
  release!();

  const committed = (await server.sql<{ id: string }>(`select id from activity where event_type = 'project.created' and organization_id = ?`, [admin.organizationId])).map((r) => r.id);
  t.ok(committed.length >= 15, `${committed.length} events committed`);
  const second = await serve(t, serveEnv());
  const arrived = () => new Set(receiver.received.map((r) => r.json?.data?.id));
  await receiver.waitFor(() => committed.every((id) => arrived().has(id)), 30_000, 'every committed event after the restart');
  t.pass('every committed event arrived');
  await other.waitFor(() => committed.every((id) => other.received.some((r) => r.json?.data?.id === id)), 30_000, 'every committed event at the other subscription');
  t.ok(other.received.every((r) => verify(second0.body.secret, r)), 'and to the other matching subscription, verified with its own secret');
  t.ok([...arrived()].every((id) => committed.includes(id)), 'nothing else (no event of a write that did not commit)');
  t.ok(receiver.received.every((r) => verify(hook.secret, r)), 'each verified');
  await server.waitFor(async () => (await server.sql(`select 1 from webhook_delivery where subscription_id = ? and status <> 'DELIVERED'`, [hook.id])).length === 0, 15_000, 'the log to settle');
  const [{ n }] = await server.sql<{ n: number }>('select count(*)::int as n from webhook_delivery where subscription_id = ?', [hook.id]);
  t.equal(n, committed.length, 'one delivery per committed event, all DELIVERED');
  t.same((await stop(second)).code, 0, 'the restarted server stops cleanly');
});
