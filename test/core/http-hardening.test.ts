// Issue 11, points 9 and 10: hostile bodies and URLs get a 4xx envelope (never a 500), and
// authentication comes before anything the router could reveal about existing routes.
import { readFileSync } from 'node:fs';
import tls from 'node:tls';
import t, { type Test } from 'tap';
import { startTestServer, type Response } from '../support/server.ts';

const server = await startTestServer(t);
const org = await server.organization();
const alice = await server.member(org);
const k = { key: alice.key };
const json = { 'content-type': 'application/json' };

function assertEnvelope(t: Test, res: Response, status: number) {
  t.equal(res.status, status, `status ${status}`);
  t.match(res.headers.get('content-type'), /^application\/json/);
  t.same(Object.keys(res.body ?? {}).filter((f) => !['details', 'errors'].includes(f)).sort(), ['error', 'message', 'path', 'statusCode', 'timestamp']);
  t.equal(res.body.statusCode, status);
  t.notMatch(res.text, /\bat .+\.(ts|js):\d+|node_modules|FST_ERR/, 'no internals');
  t.ok(res.headers.get('x-request-id'), 'names the request');
}

function assertUnauthorized(t: Test, res: Response) {
  t.equal(res.status, 401, '401 before anything else');
  t.equal(res.text, '', 'empty body');
  t.match(res.headers.get('www-authenticate'), /^ApiKey /);
}

const nested = (depth: number, leaf = '1') => '['.repeat(depth) + leaf + ']'.repeat(depth);

t.test('bodies nested 10,000 deep are 400 with the envelope, on every write and on /mcp', async (t) => {
  const project = (await server.post('/api/v1/projects', { code: 'H', name: 'Hardening', description: 'd' }, k)).body;
  const bodies = [nested(10_000), '{"a":'.repeat(10_000) + '1' + '}'.repeat(10_000), `{"code":${nested(10_000)}}`];
  for (const body of bodies) {
    for (const [method, path] of [['POST', '/api/v1/projects'], ['PUT', `/api/v1/projects/${project.id}`], ['PATCH', `/api/v1/studies/${crypto.randomUUID()}/move`]]) {
      const res = await server.request(method, path, { ...k, body, headers: json });
      assertEnvelope(t, res, 400);
      t.match(res.body.message, /nested deeper than 64/);
    }
  }
  const mcp = await server.request('POST', '/mcp', { ...k, body: nested(10_000), headers: { ...json, accept: 'application/json, text/event-stream' } });
  t.equal(mcp.status, 400);
  t.equal(mcp.body.jsonrpc, '2.0', 'a JSON-RPC error on /mcp');
  t.type(mcp.body.error.code, 'number');
});

t.test('the depth cap counts brackets outside strings only, and 64 levels still parse', async (t) => {
  // Brackets inside a string are text, not nesting: this is a valid project.
  const res = await server.post('/api/v1/projects', { code: '[[[{', name: '{'.repeat(100) + '"\\' + '['.repeat(100), description: 'd' }, k);
  t.equal(res.status, 201);
  // 64 levels parse: the answer is the schema's own validation error naming the field.
  const deep = await server.request('POST', '/api/v1/projects', { ...k, body: `{"code":${nested(63, '"x"')},"name":"n","description":"d"}`, headers: json });
  assertEnvelope(t, deep, 400);
  t.same(deep.body.errors.map((e: { field: string }) => e.field), ['code']);
  const over = await server.request('POST', '/api/v1/projects', { ...k, body: `{"code":${nested(64, '"x"')}}`, headers: json });
  assertEnvelope(t, over, 400);
  t.match(over.body.message, /nested deeper than 64/);
});

t.test('an empty body sent as application/json is no body: the route answers as without the header', async (t) => {
  const bob = await server.member(org);
  const project = (await server.post('/api/v1/projects', { code: 'E', name: 'Empty', description: 'd' }, k)).body;
  const type = (await server.post('/api/v1/assay-types', { name: 'T' }, { key: (await server.admin(org)).key }));
  // 403 (not an admin) and 404 (not viewable) come before any body concern, as without the header.
  t.equal((await server.request('DELETE', `/api/v1/assay-types/${type.body.id}`, { key: bob.key, headers: json })).status, 403);
  t.equal((await server.request('DELETE', `/api/v1/projects/${project.id}`, { key: bob.key, headers: json })).status, 404);
  const task = (await server.post(`/api/v1/projects/${project.id}/tasks`, { label: 'x' }, k)).body;
  const completed = await server.request('PATCH', `/api/v1/projects/${project.id}/tasks/${task.id}/complete`, { ...k, headers: json });
  t.equal(completed.status, 200, 'the optional completion body may be left out');
  t.equal((await server.request('DELETE', `/api/v1/projects/${project.id}`, { ...k, headers: json })).status, 204);
  // A required body still is one.
  assertEnvelope(t, await server.request('POST', '/api/v1/projects', { ...k, headers: json }), 400);
});

t.test('a "__proto__" key is a 400 that says so', async (t) => {
  const res = await server.request('POST', '/api/v1/projects', { ...k, body: '{"code":"C","name":"n","description":"d","__proto__":{"x":1}}' });
  assertEnvelope(t, res, 400);
  t.match(res.body.message, /__proto__/);
});

/** Sends raw bytes over TLS and returns the raw response (the server closes the connection). */
function rawExchange(head: string): Promise<string> {
  const { port } = new URL(server.url);
  const ca = readFileSync(process.env.LABDATA_TEST_TLS_CERT!, 'utf8');
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = tls.connect({ host: '127.0.0.1', port: Number(port), ca, servername: 'localhost' }, () => socket.end(head));
    socket.on('data', (c) => chunks.push(c));
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
    socket.on('error', reject);
  });
}

t.test('requests Node cannot parse still get the error envelope (and HSTS)', async (t) => {
  const host = 'Host: localhost\r\n';
  const cases: [string, string, number][] = [
    ['a URL over 16 KiB', `GET /api/v1/projects?${'a=1&'.repeat(8000)} HTTP/1.1\r\n${host}\r\n`, 414],
    ['a URL over 8 KiB', `GET /api/v1/projects?${'a=1&'.repeat(2100)} HTTP/1.1\r\n${host}\r\n`, 414],
    ['a URL of 17 KiB', `GET /api/v1/projects?${'a'.repeat(17 * 1024)} HTTP/1.1\r\n${host}\r\n`, 414],
    ['a URL over 64 KiB', `GET /api/v1/projects?${'a'.repeat(70 * 1024)} HTTP/1.1\r\n${host}\r\n`, 414],
    ['one header of 17 KiB', `GET /api/v1/projects HTTP/1.1\r\n${host}x-big: ${'v'.repeat(17 * 1024)}\r\n\r\n`, 431],
    ['headers over 64 KiB', `GET /api/v1/projects HTTP/1.1\r\n${host}x-big: ${'v'.repeat(70 * 1024)}\r\n\r\n`, 431],
    ['3,000 headers', `GET /api/v1/projects HTTP/1.1\r\n${host}${Array.from({ length: 3000 }, (_, i) => `x-h${i}: v\r\n`).join('')}\r\n`, 431],
    ['a header line without a colon', `GET /api/v1/projects HTTP/1.1\r\n${host}not a header\r\n\r\n`, 400],
    ['a bad chunk size', `POST /api/v1/projects HTTP/1.1\r\n${host}Transfer-Encoding: chunked\r\n\r\nzz\r\n`, 400],
    ['an HTTP/1.1 request without Host', `GET /api/v1/projects HTTP/1.1\r\nConnection: close\r\n\r\n`, 400],
    ['an Expect other than 100-continue', `GET /api/v1/projects HTTP/1.1\r\n${host}Expect: 200-ok\r\n\r\n`, 417],
    ['a transfer coding other than chunked', `POST /api/v1/projects HTTP/1.1\r\n${host}Transfer-Encoding: gzip, chunked\r\nContent-Type: application/json\r\n\r\n2\r\n{}\r\n0\r\n\r\n`, 501],
  ];
  for (const [what, head, status] of cases) {
    const response = await rawExchange(head);
    const [top, body] = response.split('\r\n\r\n');
    t.match(top, new RegExp(`^HTTP/1.1 ${status} `), `${what}: ${status}`);
    t.match(top, /strict-transport-security: max-age=/i, `${what}: HSTS`);
    t.match(top, /\r\nx-request-id: [0-9a-f-]{36}\r\n/i, `${what}: a request id`);
    const parsed = JSON.parse(body);
    t.same(Object.keys(parsed).sort(), ['error', 'message', 'path', 'statusCode', 'timestamp'], `${what}: the envelope`);
    t.equal(parsed.statusCode, status);
  }
});

t.test('a body over the size limit is 413 with the envelope', async (t) => {
  const res = await server.post('/api/v1/projects', { code: 'x'.repeat(2_000_000), name: 'n', description: 'd' }, k);
  assertEnvelope(t, res, 413);
  t.equal(res.body.error, 'Payload Too Large');
});

t.test('an over-long path parameter: 401 without a key, the envelope with one', async (t) => {
  const long = 'a'.repeat(5000);
  for (const path of [`/api/v1/projects/${long}`, `/api/beta/projects/${long}`, `/api/v1/projects/${crypto.randomUUID()}/tasks/${long}`]) {
    assertUnauthorized(t, await server.get(path));
    assertUnauthorized(t, await server.get(path, { key: alice.key + 'x' }));
    assertUnauthorized(t, await server.get(path, { headers: { authorization: 'Bearer abc' } }));
    const res = await server.get(path, k);
    assertEnvelope(t, res, 414);
    t.equal(res.body.path, path);
  }
  // Malformed percent-encoding is refused by the router too: same order.
  assertUnauthorized(t, await server.get('/api/v1/projects/%E0%A4%A'));
  assertEnvelope(t, await server.get('/api/v1/projects/%E0%A4%A', k), 400);
  // The internal mount refuses keys whatever the URL.
  const internal = await server.get(`/api/i/things/${long}`, k);
  t.equal(internal.status, 401);
  t.equal(internal.text, '');
});

t.test('every error after authentication carries the envelope', async (t) => {
  assertUnauthorized(t, await server.get('/api/v1/no-such-route'));
  assertEnvelope(t, await server.get('/api/v1/no-such-route', k), 404);
  // No PATCH on the collection: the router's "no such method" is a 404 envelope too.
  assertEnvelope(t, await server.request('PATCH', '/api/v1/projects', k), 404);
  assertEnvelope(t, await server.request('POST', '/api/v1/projects', { ...k, body: '<x/>', headers: { 'content-type': 'application/xml' } }), 415);
  assertEnvelope(t, await server.request('POST', '/api/v1/projects', { ...k, body: '{"code":', headers: json }), 400);
  assertEnvelope(t, await server.get(`/api/v1/projects/not-a-uuid`, k), 400);
});

t.test('repeated Authorization headers present no key: 401, whichever comes first', async (t) => {
  const host = 'Host: localhost\r\n';
  const bob = await server.member(org);
  for (const [first, second] of [[`ApiKey ${alice.key}`, 'Bearer abc'], ['Bearer abc', `ApiKey ${alice.key}`], [`ApiKey ${bob.key}`, `ApiKey ${alice.key}`], [`ApiKey ${alice.key}`, `ApiKey ${alice.key}`]]) {
    const response = await rawExchange(`GET /api/v1/projects HTTP/1.1\r\n${host}Authorization: ${first}\r\nAuthorization: ${second}\r\nConnection: close\r\n\r\n`);
    t.match(response, /^HTTP\/1.1 401 /, `${first.split(' ')[0]} then ${second.split(' ')[0]}`);
  }
  t.equal((await server.get('/api/v1/projects', { headers: { authorization: `ApiKey ${alice.key}` } })).status, 200, 'one header still authenticates');
});

t.test('below /mcp the key is checked first: 401 without one, a 404 envelope with one', async (t) => {
  for (const path of ['/mcp/', '/mcp/x', '/mcp/tools/list']) {
    assertUnauthorized(t, await server.get(path));
    assertUnauthorized(t, await server.request('POST', path, { body: '{}', headers: json }));
    assertEnvelope(t, await server.get(path, k), 404);
  }
});

t.test('answers for a key are never stored by shared caches, and never sniffed', async (t) => {
  for (const res of [await server.get('/api/v1/projects', k), await server.get('/api/beta/projects', k), await server.get('/api/v1/projects'), await server.get('/docs/api-docs/public-v1', k)]) {
    t.equal(res.headers.get('cache-control'), 'no-store');
    t.equal(res.headers.get('x-content-type-options'), 'nosniff');
  }
  t.equal((await server.get('/healthz')).headers.get('x-content-type-options'), 'nosniff');
});

t.test('a body in a content coding is refused (415), not misread', async (t) => {
  const body = JSON.stringify({ code: 'CE', name: 'Coded', description: 'd' });
  for (const coding of ['gzip', 'br']) {
    const res = await server.post('/api/v1/projects', body, { ...k, headers: { ...json, 'content-encoding': coding } });
    assertEnvelope(t, res, 415);
    t.match(res.body.message, `Content-Encoding "${coding}"`);
  }
  t.equal((await server.post('/api/v1/projects', body, { ...k, headers: { ...json, 'content-encoding': 'identity' } })).status, 201, 'identity is no coding');
});

t.test('an API key sent as X-Request-Id is neither echoed nor logged as the id', async (t) => {
  const res = await server.get('/api/v1/projects', { ...k, headers: { 'x-request-id': alice.key } });
  t.equal(res.status, 200);
  t.match(res.headers.get('x-request-id'), /^[0-9a-f-]{36}$/, 'a fresh id instead');
  t.equal((await server.get('/api/v1/projects', { ...k, headers: { 'x-request-id': 'trace-42.a' } })).headers.get('x-request-id'), 'trace-42.a', 'a real id still follows the call');
});
