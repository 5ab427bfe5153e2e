import t from 'tap';
import { captureLogs } from '../support/logs.ts';
import { startTestServer } from '../support/server.ts';

// The app's JSON log lines, parsed.
const { logger, lines } = captureLogs();

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
