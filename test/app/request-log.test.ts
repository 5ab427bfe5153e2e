import t from 'tap';
import { captureLogs } from '../support/logs.ts';
import { startTestServer } from '../support/server.ts';
import { redactUrl } from '../../app/http/redact.ts';

// The app's JSON log lines, parsed.
const { logger, lines } = captureLogs();

const server = await startTestServer(t, { logger, plugins: ['users', 'projects'] });
const org = await server.organization();
const alice = await server.admin(org);
const secretOf = (key: string) => key.split('.')[1];

t.test('one line per request: request id, route template, status, duration, user and organization ids', async (t) => {
  lines.length = 0;
  const created = await server.request('POST', '/api/v1/projects', { key: alice.key, body: { code: 'LOG', name: 'Logged', description: 'd', visibility: 'PUBLIC' } });
  t.equal(created.status, 201);
  t.equal((await server.get(`/api/v1/projects/${created.body.id}`, { key: alice.key })).status, 200);
  t.equal((await server.get('/api/v1/projects', {})).status, 401);
  const done = lines.filter((l) => l.msg === 'request completed');
  t.equal(done.length, 3, 'one line per request');
  t.notOk(lines.some((l) => l.msg === 'incoming request'), 'no second line per request');
  const [post, read, anonymous] = done;
  t.match(post, { method: 'POST', url: '/api/v1/projects', route: '/api/v1/projects', status: 201, userId: alice.userId, organizationId: alice.organizationId, keyId: alice.keyId });
  t.match(read, { method: 'GET', route: '/api/v1/projects/:id', status: 200, userId: alice.userId, organizationId: alice.organizationId });
  t.equal(read.url, `/api/v1/projects/${created.body.id}`);
  t.match(anonymous, { status: 401, route: '/api/v1/projects' });
  t.notOk('userId' in anonymous || 'organizationId' in anonymous, 'no user before authentication');
  for (const line of done) {
    t.type(line.reqId, 'string', 'request id on every line');
    t.type(line.durationMs, 'number', 'duration on every line');
  }
  t.notOk(JSON.stringify(lines).includes(secretOf(alice.key)), 'never the key');
});

t.test('secret-looking query parameters and key-shaped tokens are redacted in logged URLs', async (t) => {
  lines.length = 0;
  const secret = secretOf(alice.key);
  const query = [
    `apiKey=${encodeURIComponent(alice.key)}`,
    'api_key=plain-api-key-value',
    'token=tok-value-123',
    'password=hunter2-value',
    'client_secret=cs-value-456',
    'X-Api-Key=header-style-value',
    `other=${alice.key}`,
    'size=5',
  ].join('&');
  t.equal((await server.get(`/api/v1/projects?${query}`, { key: alice.key })).status, 200);
  t.equal((await server.get(`/api/v1/no-such-route/${alice.key}?key=k-value-789`, { key: alice.key })).status, 404);
  // Unknown routes outside the mounts are logged by Fastify's not-found path.
  t.equal((await server.get(`/nowhere?token=tok-value-123&apiKey=${alice.key}`, {})).status, 404);
  const text = JSON.stringify(lines);
  for (const value of [secret, 'plain-api-key-value', 'tok-value-123', 'hunter2-value', 'cs-value-456', 'header-style-value', 'k-value-789']) {
    t.notOk(text.includes(value), `${value} is not logged`);
  }
  const urls = lines.filter((l) => l.msg === 'request completed').map((l) => String(l.url));
  t.equal(urls.length, 3);
  t.match(urls[0], /apiKey=\[REDACTED\]&api_key=\[REDACTED\]&token=\[REDACTED\]&password=\[REDACTED\]&client_secret=\[REDACTED\]&X-Api-Key=\[REDACTED\]/);
  t.match(urls[0], `other=key_${alice.keyId}.[REDACTED]`, 'a key under any name: its id stays, its secret goes');
  t.match(urls[0], /&size=5$/, 'other parameters are kept');
  t.match(urls[1], `/api/v1/no-such-route/key_${alice.keyId}.[REDACTED]?key=[REDACTED]`, 'a key in the path too');
});

t.test('redactUrl', async (t) => {
  t.equal(redactUrl('/a?page=1&sort=name'), '/a?page=1&sort=name', 'nothing secret: unchanged');
  t.equal(redactUrl('/a?keyword=x&author=y'), '/a?keyword=x&author=y', 'names that merely contain "key" or "auth" stay');
  t.equal(redactUrl('/a?access_token=x#frag'), '/a?access_token=[REDACTED]#frag');
  t.equal(redactUrl('/a?Authorization=ApiKey%20x&bearer=y&pass=z'), '/a?Authorization=[REDACTED]&bearer=[REDACTED]&pass=[REDACTED]');
  t.equal(redactUrl('https://h/x?api%5Fkey=v'), 'https://h/x?api%5Fkey=[REDACTED]', 'names are compared decoded');
  t.equal(redactUrl('/a?q=key_abcdefghijklmnopqrst%2Esecretpart'), '/a?q=key_abcdefghijklmnopqrst.[REDACTED]', 'an encoded dot still marks a key');
});
