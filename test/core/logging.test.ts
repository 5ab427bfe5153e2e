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
