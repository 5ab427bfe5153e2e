import t from 'tap';
import { Writable } from 'node:stream';
import pino from 'pino';
import type { FastifyBaseLogger } from 'fastify';
import { startTestServer } from '../support/server.ts';

// Captures the app's JSON log lines.
const lines: Record<string, unknown>[] = [];
const sink = new Writable({
  write(chunk, _enc, done) {
    for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
    done();
  },
});
const logger = pino({ level: 'info' }, sink) as unknown as FastifyBaseLogger;

const server = await startTestServer(t, { logger });
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
