import { readFileSync } from 'node:fs';
import tls from 'node:tls';
import t from 'tap';
import { captureLogs } from '../support/logs.ts';
import { startTestServer } from '../support/server.ts';
import { definePlugin, defineRead, defineWrite, Type, withStatus } from '../../core/public.ts';

// The app's JSON log lines, parsed.
const { logger, lines } = captureLogs();

// A read that fails as a lost database would, after a while: for a client that hangs up meanwhile.
const slow = definePlugin({
  name: 'slow-outage',
  version: '1.0.0',
  register(ctx) {
    ctx.read(defineRead({
      name: 'slow_outage', description: 'd', path: '/slow-outage', response: Type.Object({}), tool: false,
      run: async () => {
        slowOutageEntered.resolve();
        await new Promise((r) => setTimeout(r, 300));
        throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
      },
    }));
  },
});
/** Settles when the slow read's handler runs: the client hangs up only then. */
let slowOutageEntered = Promise.withResolvers<void>();
// A create that writes outside db.writeTransaction: its Idempotency-Key claim is never marked.
const unmarked = definePlugin({
  name: 'unmarked-create',
  version: '1.0.0',
  register(ctx) {
    ctx.write(defineWrite({
      method: 'POST', operationId: 'create_unmarked', description: 'd', path: '/unmarked', status: 201, alternativeStatus: 200,
      body: Type.Object({ existing: Type.Optional(Type.Boolean()) }),
      response: Type.Object({ id: Type.String() }),
      // `existing`: the record was there already, nothing is written (200, like a Git repository found).
      run: async (_c, { body }) => (body.existing ? withStatus(200, { id: 'u0' }) : { id: 'u1' }),
    }));
  },
});
const server = await startTestServer(t, { logger, extraPlugins: [slow, unmarked] });
const org = await server.organization();
const alice = await server.member(org);

t.test('every request log line has a request id; authenticated lines name the key id, never the secret', async (t) => {
  lines.length = 0;
  t.equal((await server.get('/api/v1/projects', { key: alice.key })).status, 200);
  t.equal((await server.get('/api/v1/projects', { headers: { authorization: `ApiKey ${alice.key}` } })).status, 200);
  t.equal((await server.get('/api/v1/projects', { key: alice.key + 'x' })).status, 401);
  t.ok(lines.length >= 3, 'a line per request was logged');
  for (const line of lines) t.type(line.reqId, 'string', 'reqId on every line');
  const completed = lines.filter((l) => l.msg === 'request completed');
  t.same(completed.map((l) => l.keyId), [alice.keyId, alice.keyId, undefined]);
  const secret = alice.key.split('.')[1];
  const text = JSON.stringify(lines);
  t.notOk(text.includes(secret), 'the secret never appears in the logs');
});

t.test('a key sent as an MCP tool name is not logged', async (t) => {
  lines.length = 0;
  const res = await server.request('POST', '/mcp', {
    key: alice.key,
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: alice.key, arguments: {} } }),
  });
  t.equal(res.status, 200);
  const call = lines.find((l) => l.msg === 'tool call');
  t.equal(call?.outcome, 'unknown_tool', 'the call was logged');
  t.notOk(JSON.stringify(lines).includes(alice.key.split('.')[1]), 'without the secret');
});

t.test('a client that hangs up mid-body is logged as a client mistake with its request line, not as a database outage', async (t) => {
  const hangUp = async (key: string) => {
    lines.length = 0;
    const { port } = new URL(server.url);
    const ca = readFileSync(process.env.LABDATA_TEST_TLS_CERT!, 'utf8');
    const head = `POST /api/v1/projects HTTP/1.1\r\nHost: localhost\r\nX-API-KEY: ${key}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"code":"`;
    await new Promise<void>((resolve, reject) => {
      const socket = tls.connect({ host: '127.0.0.1', port: Number(port), ca, servername: 'localhost' }, () => {
        socket.write(head);
        // Authentication runs on the headers (the 401 below comes before the body): a second is ample.
        setTimeout(() => socket.destroy(), 1_000);
      });
      socket.on('close', () => resolve());
      socket.on('error', reject);
    });
    for (let i = 0; i < 50 && !lines.some((l) => l.url === '/api/v1/projects'); i++) await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 100));
    return lines.filter((l) => l.url === '/api/v1/projects');
  };
  const aborted = await hangUp(alice.key);
  t.match(aborted, [{ msg: 'request aborted by the client', method: 'POST', route: '/api/v1/projects', userId: alice.userId }], 'one line for the request');
  t.equal(aborted.length, 1);
  t.notOk(lines.some((l) => l.msg === 'database unavailable'), 'no outage is reported');
  t.notOk(lines.some((l) => (l.level as number) >= 40), 'nothing at warn or error');
  t.same(await hangUp(alice.key + 'x').then((l) => l.map((x) => [x.msg, x.status])), [['request completed', 401]], 'answered before the body ended: its one line');

  // A whole request, then a hang-up while the handler runs: the handler's failure is still its own.
  lines.length = 0;
  slowOutageEntered = Promise.withResolvers<void>();
  const { port } = new URL(server.url);
  const ca = readFileSync(process.env.LABDATA_TEST_TLS_CERT!, 'utf8');
  await new Promise<void>((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port: Number(port), ca, servername: 'localhost' }, () => {
      socket.write(`GET /api/v1/slow-outage HTTP/1.1\r\nHost: localhost\r\nX-API-KEY: ${alice.key}\r\n\r\n`);
      void slowOutageEntered.promise.then(() => socket.destroy());
    });
    socket.on('close', () => resolve());
    socket.on('error', reject);
  });
  await server.waitFor(() => lines.some((l) => l.msg === 'database unavailable'), 5_000, 'the outage logged');
  t.match(lines.filter((l) => l.url === '/api/v1/slow-outage'), [{ msg: 'request aborted by the client', route: '/api/v1/slow-outage' }], 'and the request its one line');
  t.equal((await server.get('/api/v1/projects', { key: alice.key })).status, 200, 'the server serves on');
});

t.test('a create with an Idempotency-Key that wrote outside a write transaction is logged as unprotected', async (t) => {
  lines.length = 0;
  const res = await server.post('/api/v1/unmarked', {}, { key: alice.key, headers: { 'idempotency-key': 'unmarked-1' } });
  t.equal(res.status, 201);
  t.match(lines.find((l) => /outside db.writeTransaction/.test(String(l.msg))), { level: 40, route: '/api/v1/unmarked' });
  lines.length = 0;
  t.equal((await server.post('/api/v1/projects', { code: 'M', name: 'Marked', description: 'd' }, { key: alice.key, headers: { 'idempotency-key': 'marked-1' } })).status, 201);
  t.notOk(lines.some((l) => /outside db.writeTransaction/.test(String(l.msg))), 'a create through db.writeTransaction is not');
  t.equal((await server.post('/api/v1/unmarked', { existing: true }, { key: alice.key, headers: { 'idempotency-key': 'unmarked-2' } })).status, 200);
  t.notOk(lines.some((l) => /outside db.writeTransaction/.test(String(l.msg))), 'nor one that found its record and wrote nothing (200)');
});
