// A database that stops answering without closing its connections (a frozen server, a network
// that drops packets) is an outage like a stopped one (README, "Database outage"): requests end
// with 503 and Retry-After instead of waiting for ever, and the same server answers again once
// the database does. A real `labdata serve` reaches the database through a proxy of this file
// that can hold every byte in both directions.
import t from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import { join } from 'node:path';
import { createTestDatabase } from '../support/db.ts';
import { dataDir, serve } from '../support/serve-process.ts';
import { runCliInProcess } from '../cli/labdata-cli.ts';

/** A TCP proxy to `target` that can stop forwarding (sockets stay open, nothing moves) and resume. */
async function holdingProxy(target: URL) {
  const sockets: net.Socket[] = [];
  let held = false;
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    for (const [from, to] of [[client, upstream], [upstream, client]] as const) {
      from.on('error', () => to.destroy());
      from.on('close', () => to.destroy());
      from.pipe(to);
      sockets.push(from);
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
      for (const socket of sockets) socket.pause();
    },
    resume() {
      held = false;
      for (const socket of sockets) if (!socket.destroyed) socket.resume();
    },
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const ca = readFileSync(process.env.LABDATA_TEST_TLS_CERT!, 'utf8');
function request(url: string, opts: { method?: string; key?: string; headers?: Record<string, string>; body?: unknown } = {}) {
  return new Promise<{ status: number; headers: Record<string, unknown>; body: any }>((resolve, reject) => {
    const payload = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    const req = https.request(url, {
      method: opts.method ?? 'GET',
      ca,
      headers: { ...(opts.key ? { 'x-api-key': opts.key } : {}), ...(payload ? { 'content-type': 'application/json' } : {}), ...opts.headers },
    }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text ? JSON.parse(text) : undefined }));
    });
    req.on('error', reject);
    req.end(payload);
  });
}

// Provisioned straight on the database (the CLI migrates it), then served through the proxy.
const databaseUrl = await createTestDatabase(t);
const dir = dataDir(t);
const file = join(dir, 'bootstrap.json');
writeFileSync(file, JSON.stringify({
  organizations: [{ ref: 'acme', name: 'Acme' }],
  users: [{ ref: 'alice', email: 'alice@acme.test', memberships: [{ organization: 'acme', roles: ['ORGANIZATION_ADMIN'] }] }],
  apiKeys: [{ ref: 'alice', user: 'alice', organization: 'acme', name: 'k', days: 7 }],
}));
const provisioned = await runCliInProcess(['bootstrap', file], { LABDATA_DATABASE_URL: databaseUrl });
if (provisioned.code !== 0) throw new Error(provisioned.stderr);
const key = provisioned.json.apiKeys.alice.key as string;
const proxy = await holdingProxy(new URL(databaseUrl));
t.teardown(() => proxy.close());
const served = await serve(t, {
  LABDATA_DATABASE_URL: proxy.url,
  LABDATA_DATA_DIR: dir,
  LABDATA_TLS_CERT: process.env.LABDATA_TEST_TLS_CERT!,
  LABDATA_TLS_KEY: process.env.LABDATA_TEST_TLS_KEY!,
});
const created = await request(`${served.url}/api/v1/projects`, { method: 'POST', key, body: { code: 'H', name: 'Hung', description: 'd' } });
if (created.status !== 201) throw new Error(JSON.stringify(created.body));
const project = `${served.url}/api/v1/projects/${created.body.id}`;

t.test('while the database does not answer, requests end with 503 and Retry-After; then it serves again', async (t) => {
  t.equal((await request(project, { key })).status, 200, 'warm: the key is cached, the pool holds idle connections');
  proxy.hold();
  const started = Date.now();
  const [get, post, ready] = await Promise.all([
    request(project, { key }),
    request(`${served.url}/api/v1/projects`, { method: 'POST', key, headers: { 'idempotency-key': 'hung-1' }, body: { code: 'H2', name: 'Hung 2', description: 'd' } }),
    request(`${served.url}/readyz`),
  ]);
  const elapsed = Date.now() - started;
  for (const [name, res] of [['GET', get], ['keyed POST', post], ['/readyz', ready]] as const) {
    t.equal(res.status, 503, `${name}: 503`);
    t.equal(res.headers['retry-after'], '5', `${name}: Retry-After`);
    t.match(res.body, { statusCode: 503, error: 'Service Unavailable' }, `${name}: the error envelope`);
  }
  // Each query waits at most 5 s (checked every second): authentication, then the create's claim.
  t.ok(elapsed < 20_000, `bounded: all answered within ${elapsed} ms`);

  proxy.resume();
  let back = 0;
  for (const deadline = Date.now() + 15_000; Date.now() < deadline; ) {
    back = (await request(project, { key })).status;
    if (back === 200) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  t.equal(back, 200, 'answers again once the database does, without a restart');
  const list = await request(`${served.url}/api/v1/projects`, { key });
  t.equal(list.body.totalElements, list.body.content.length, 'nothing half-made: the total is the rows');
});
