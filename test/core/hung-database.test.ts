// A database that stops answering without closing its connections (a frozen server, a network
// that drops packets) is an outage like a stopped one (README, "Database outage"): requests end
// with 503 and Retry-After instead of waiting for ever, and the same server answers again once
// the database does. The database is reached through a proxy of this file that can hold every
// byte in both directions.
import t from 'tap';
import net from 'node:net';
import { createTestDatabase } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import { limitQueryTime } from '../../core/db/orm.ts';

/** A TCP proxy to `target` that can stop forwarding (sockets stay open, nothing moves) and resume. */
async function holdingProxy(target: URL) {
  const pairs: net.Socket[] = [];
  let held = false;
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    for (const [from, to] of [[client, upstream], [upstream, client]] as const) {
      from.on('error', () => to.destroy());
      from.on('close', () => to.destroy());
      from.pipe(to);
      pairs.push(from);
      if (held) from.pause();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(target);
  url.port = String((server.address() as net.AddressInfo).port);
  return {
    url: url.toString(),
    hold() {
      held = true;
      for (const socket of pairs) socket.pause();
    },
    resume() {
      held = false;
      for (const socket of pairs) if (!socket.destroyed) socket.resume();
    },
    close: () => {
      for (const socket of pairs) socket.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const proxy = await holdingProxy(new URL(await createTestDatabase(t)));
t.teardown(() => proxy.close());
const server = await startTestServer(t, { databaseUrl: proxy.url });
const org = await server.organization();
const alice = await server.member(org);
const k = { key: alice.key };
const created = await server.post('/api/v1/projects', { code: 'H', name: 'Hung', description: 'd' }, k);
if (created.status !== 201) throw new Error(created.text);
const projectPath = `/api/v1/projects/${created.body.id}`;
// The 5 s of production, shortened so the test does not wait that long (same code path).
await limitQueryTime(server.orm, 1_500);

t.test('while the database does not answer, requests end with 503 and Retry-After; then it serves again', async (t) => {
  t.equal((await server.get(projectPath, k)).status, 200, 'warm: the key is cached, the pool holds idle connections');
  proxy.hold();
  const started = Date.now();
  const [get, post, ready] = await Promise.all([
    server.get(projectPath, k),
    server.post('/api/v1/projects', { code: 'H2', name: 'Hung 2', description: 'd' }, { ...k, headers: { 'idempotency-key': 'hung-1' } }),
    server.get('/readyz'),
  ]);
  const elapsed = Date.now() - started;
  for (const [name, res] of [['GET', get], ['keyed POST', post], ['/readyz', ready]] as const) {
    t.equal(res.status, 503, `${name}: 503`);
    t.equal(res.headers.get('retry-after'), '5', `${name}: Retry-After`);
    t.match(res.body, { statusCode: 503, error: 'Service Unavailable' }, `${name}: the error envelope`);
  }
  t.ok(elapsed < 10_000, `bounded: all answered within ${elapsed} ms`);

  proxy.resume();
  let back = 0;
  for (const deadline = Date.now() + 15_000; Date.now() < deadline; ) {
    back = (await server.get(projectPath, k)).status;
    if (back === 200) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  t.equal(back, 200, 'answers again once the database does, without a restart');
  const list = await server.get('/api/v1/projects', k);
  t.equal(list.body.totalElements, list.body.content.length, 'nothing half-made: the total is the rows');
});
