// Issue 11, point 5: with PostgreSQL stopped, REST answers 503 with the error envelope and
// `Retry-After` and /mcp a JSON-RPC error (never a 500); once it is back, the same server
// answers again within 5 s, without a restart. The database is a private embedded PostgreSQL
// for this file, really stopped and started again on the same port.
import t from 'tap';
import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import pino from 'pino';
import * as postgres from '../../app/db/postgres-cluster.ts';
import { freePort } from '../../app/db/embedded.ts';
import { startTestServer, type Response } from '../support/server.ts';

const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'labdata-outage-'));
// As root the cluster runs as `postgres`, which must reach its directory.
await fs.chmod(dir, 0o711);
const password = crypto.randomBytes(12).toString('hex');
const port = await freePort();
// Run the way the server runs its embedded database (no password file in a shared /tmp).
const account = await postgres.clusterAccount();
const bin = await postgres.binariesFor(account, () => {});
const pgDir = path.join(dir, 'pg');
await postgres.prepareClusterDir(pgDir, account);
await postgres.initCluster(bin, pgDir, 'labdata', password, account);
const startCluster = () => postgres.startCluster(bin, pgDir, port, account, ['fsync=off']);
let cluster = await startCluster();
let running = true;
// Registered before the server's teardown, so it runs after it (tap runs teardowns last-in first-out).
t.teardown(async () => {
  if (running) await cluster.stop();
  await fs.rm(dir, { recursive: true, force: true });
});
const admin = new pg.Client({ connectionString: `postgresql://labdata:${password}@127.0.0.1:${port}/postgres` });
await admin.connect();
await admin.query('create database outage');
await admin.end();

// Every plugin and the job workers run, as in production: none of their connections may take
// the process down when the database goes away.
// The log, to see what the outage is reported as.
const logged: { level: number; msg: string }[] = [];
const logger = pino({ level: 'info' }, { write: (line: string) => void logged.push(JSON.parse(line)) });
const server = await startTestServer(t, { jobs: true, logger, databaseUrl: `postgresql://labdata:${password}@127.0.0.1:${port}/outage` });
const org = await server.organization();
const alice = await server.member(org);
const k = { key: alice.key };
const created = await server.post('/api/v1/projects', { code: 'O', name: 'Outage', description: 'd' }, k);
if (created.status !== 201) throw new Error(created.text);
const projectPath = `/api/v1/projects/${created.body.id}`;

function mcpCall(id: number): Promise<globalThis.Response> {
  return fetch(`${server.url}/mcp`, {
    method: 'POST',
    headers: { 'x-api-key': alice.key, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'get_project', arguments: { id: created.body.id } } }),
  });
}

t.test('with the database up, everything answers', async (t) => {
  t.equal((await server.get(projectPath, k)).status, 200);
  const res = await mcpCall(1);
  t.equal(res.status, 200);
  t.match(await res.json(), { id: 1, result: { structuredContent: { id: created.body.id } } });
});

t.test('with PostgreSQL stopped: 503 envelopes with Retry-After on REST, JSON-RPC errors on /mcp', async (t) => {
  await cluster.stop();
  running = false;
  // Under load: reads, lists and writes at once, twice over (the pool and the auth cache lose
  // their connections on the way).
  for (let round = 0; round < 2; round++) {
    const responses: Response[] = await Promise.all([
      ...Array.from({ length: 5 }, () => server.get(projectPath, k)),
      server.get('/api/v1/projects', k),
      server.post('/api/v1/projects', { code: 'X', name: 'X', description: 'd' }, k),
      // A create with an Idempotency-Key: its claim meets the outage first.
      server.post('/api/v1/projects', { code: 'Y', name: 'Y', description: 'd' }, { ...k, headers: { 'idempotency-key': `outage-${round}` } }),
      server.put(projectPath, { name: 'Renamed' }, k),
      server.delete(projectPath, k),
    ]);
    for (const res of responses) {
      t.equal(res.status, 503, `503, not ${res.status} ${res.text}`);
      t.match(res.headers.get('retry-after'), /^\d+$/, 'Retry-After in seconds');
      t.match(res.body, { statusCode: 503, error: 'Service Unavailable', message: /database/i, path: /^\/api\/v1\/projects/ });
      t.same(Object.keys(res.body).sort(), ['error', 'message', 'path', 'statusCode', 'timestamp'], 'exactly the envelope');
    }
    const rpc = await mcpCall(2 + round);
    t.not(rpc.status, 500, 'no 500 on /mcp');
    t.match(await rpc.json(), { jsonrpc: '2.0', error: { code: -32001, message: /unavailable/i, data: { retryAfter: Number } } }, 'a JSON-RPC error');
  }
  t.equal((await server.get(projectPath)).status, 401, 'no key is still 401: authentication comes first');
});

t.test('PostgreSQL back: the same server answers again within 5 s', async (t) => {
  cluster = await startCluster();
  running = true;
  const deadline = Date.now() + 5_000;
  let last: Response | undefined;
  while (Date.now() < deadline) {
    last = await server.get(projectPath, k);
    if (last.status === 200) break;
    t.equal(last.status, 503, 'until then, still 503');
    await new Promise((r) => setTimeout(r, 100));
  }
  t.equal(last?.status, 200, 'recovered without a restart');
  t.equal((await server.post('/api/v1/projects', { code: 'Y', name: 'Back', description: 'd' }, k)).status, 201, 'writes too');
  const rpc = await mcpCall(9);
  t.equal(rpc.status, 200);
  t.match(await rpc.json(), { id: 9, result: { structuredContent: { id: created.body.id } } }, 'and /mcp');
});

t.test('the job queue reports the outage as a warning, not as errors with stacks', async (t) => {
  const queue = logged.filter((l) => /job queue/.test(l.msg));
  t.ok(queue.length > 0, 'the job queue noticed the outage');
  t.same(queue.filter((l) => l.level >= 50), [], 'none at error level');
  t.ok(queue.every((l) => l.level === 40 && l.msg === 'job queue: database unavailable; retrying'), 'one warning line each');
});
