import http from 'node:http';
import net from 'node:net';
import t from 'tap';
import { startTestServer, type TestServer } from '../support/server.ts';

const server = await startTestServer(t);
const proxied = await startTestServer(t, { env: { LABDATA_TRUST_PROXY: 'true' } });
const community = await startTestServer(t, { env: { LABDATA_ENTERPRISE: 'false' } });

const org = await server.organization();
const member = await server.member(org);
const proxiedMember = await proxied.member(await proxied.organization());
const communityMember = await community.member(await community.organization());

const created = await server.post('/api/v1/projects', { code: 'T-1', name: 'Transport', description: 'x', visibility: 'PUBLIC' }, { key: member.key });
const projectId: string = created.body.id;

const portOf = (s: TestServer) => Number(new URL(s.url).port);

/** Writes raw bytes to the TLS port over plain TCP and collects whatever comes back until close. */
function plainTcp(port: number, request: string): Promise<{ received: Buffer; closed: boolean }> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    const socket = net.connect(port, '127.0.0.1', () => socket.write(request));
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ received: Buffer.concat(chunks), closed: false });
    }, 5000);
    socket.on('data', (c) => chunks.push(c));
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ received: Buffer.concat(chunks), closed: true });
    });
  });
}

/** A plain-HTTP request (as a TLS-terminating proxy would forward it) to the TLS port. */
function plainHttp(port: number, path: string, headers: Record<string, string>): Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, method: 'GET', headers: { host: 'localhost', ...headers }, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text }));
    });
    req.on('error', reject);
    req.end();
  });
}

const envelopeKeys = ['timestamp', 'statusCode', 'error', 'message', 'path'];

t.test('Strict-Transport-Security is on every response', async (t) => {
  const responses = {
    '200': await server.get('/api/v1/projects', { key: member.key }),
    '201': await server.post('/api/v1/projects', { code: 'T-2', name: 'x', description: 'x' }, { key: member.key }),
    '204': await server.delete(`/api/v1/projects/${(await server.post('/api/v1/projects', { code: 'T-3', name: 'x', description: 'x' }, { key: member.key })).body.id}`, { key: member.key }),
    '400': await server.get('/api/v1/projects?size=0', { key: member.key }),
    '401': await server.get('/api/v1/projects'),
    '404': await server.get('/api/v1/nothing-here', { key: member.key }),
    '404 outside the mounts': await server.get('/nothing-here'),
    'healthz': await server.get('/healthz'),
    'readyz': await server.get('/readyz'),
    'beta': await server.get('/api/beta/projects', { key: member.key }),
    'docs': await server.get('/docs/api-docs/public-v1', { key: member.key }),
    'internal mount': await server.get('/api/i/projects'),
    'mcp': await server.post('/mcp', { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }, { key: member.key, headers: { accept: 'application/json, text/event-stream' } }),
  };
  for (const [what, res] of Object.entries(responses)) {
    t.match(res.headers.get('strict-transport-security'), /^max-age=\d+/, what);
    t.ok(Number(/max-age=(\d+)/.exec(res.headers.get('strict-transport-security') ?? '')?.[1]) >= 31536000, `${what}: at least a year`);
  }
  t.equal(responses['204'].status, 204);
});

t.test('a malformed URL is a 400 envelope with HSTS too', async (t) => {
  const res = await server.get('/api/v1/projects/%zz', { key: member.key });
  t.equal(res.status, 400);
  t.match(res.body, { statusCode: 400, error: 'Bad Request' });
  t.match(res.headers.get('strict-transport-security'), /max-age=/);
});

t.test('plain HTTP to the TLS port gets no HTTP response at all', async (t) => {
  const { received, closed } = await plainTcp(portOf(server), 'GET / HTTP/1.1\r\nHost: x\r\n\r\n');
  t.ok(closed, 'the connection is closed');
  t.notOk(received.toString('latin1').includes('HTTP/1.1'), 'no HTTP bytes come back');
  const api = await plainTcp(portOf(server), `GET /api/v1/projects HTTP/1.1\r\nHost: localhost\r\nX-API-KEY: ${member.key}\r\n\r\n`);
  t.ok(api.closed);
  t.notOk(api.received.toString('latin1').includes('HTTP/'), 'not even with a valid key');
  const forwarded = await plainTcp(portOf(server), 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-Forwarded-Proto: https\r\n\r\n');
  t.notOk(forwarded.received.toString('latin1').includes('HTTP/'), 'X-Forwarded-Proto is not trusted without LABDATA_TRUST_PROXY');
});

t.test('without LABDATA_TRUST_PROXY, X-Forwarded-Proto is ignored over HTTPS', async (t) => {
  const res = await server.get('/api/v1/projects', { key: member.key, headers: { 'x-forwarded-proto': 'http' } });
  t.equal(res.status, 200);
});

t.test('behind a trusted proxy, X-Forwarded-Proto decides', async (t) => {
  const denied = await proxied.get('/api/v1/projects', { key: proxiedMember.key, headers: { 'x-forwarded-proto': 'http' } });
  t.equal(denied.status, 403, 'http over HTTPS is refused');
  t.same(Object.keys(denied.body).sort(), [...envelopeKeys].sort());
  t.match(denied.body, { statusCode: 403, error: 'Forbidden', path: '/api/v1/projects' });
  t.match(denied.headers.get('strict-transport-security'), /max-age=/);

  const healthz = await proxied.get('/healthz', { headers: { 'x-forwarded-proto': 'http' } });
  t.equal(healthz.status, 403, 'every path, not only the API');

  const allowed = await proxied.get('/api/v1/projects', { key: proxiedMember.key, headers: { 'x-forwarded-proto': 'https' } });
  t.equal(allowed.status, 200);
  const direct = await proxied.get('/api/v1/projects', { key: proxiedMember.key });
  t.equal(direct.status, 200, 'a direct HTTPS request without the header is served');
});

t.test('behind a trusted proxy, plain HTTP on the same port follows X-Forwarded-Proto', async (t) => {
  const port = portOf(proxied);
  const http403 = await plainHttp(port, '/api/v1/projects', { 'x-api-key': proxiedMember.key, 'x-forwarded-proto': 'http' });
  t.equal(http403.status, 403);
  t.match(JSON.parse(http403.text), { statusCode: 403, error: 'Forbidden', path: '/api/v1/projects' });
  t.ok(http403.headers['strict-transport-security']);

  const missing = await plainHttp(port, '/healthz', {});
  t.equal(missing.status, 403, 'plain HTTP without X-Forwarded-Proto is not trusted to be HTTPS');
  t.match(JSON.parse(missing.text), { statusCode: 403 });

  const served = await plainHttp(port, '/api/v1/projects', { 'x-api-key': proxiedMember.key, 'x-forwarded-proto': 'https' });
  t.equal(served.status, 200);
  t.equal(JSON.parse(served.text).totalElements, 0);
  t.ok(served.headers['strict-transport-security']);

  const unauthenticated = await plainHttp(port, '/api/v1/projects', { 'x-forwarded-proto': 'https' });
  t.equal(unauthenticated.status, 401);
  t.equal(unauthenticated.text, '');
});

t.test('behind a trusted proxy, a plain-HTTP request Node cannot parse gets the envelope too', async (t) => {
  const { received, closed } = await plainTcp(portOf(proxied), 'GET /api/v1/projects HTTP/1.1\r\nHost: localhost\r\nnot a header\r\n\r\n');
  const [head, body] = received.toString('utf8').split('\r\n\r\n');
  t.match(head, /^HTTP\/1.1 400 /);
  t.match(JSON.parse(body), { statusCode: 400, message: 'The request is not valid HTTP' });
  t.ok(closed, 'and the connection is closed');
});

t.test('no CORS headers anywhere, including preflights', async (t) => {
  const origin = 'https://evil.example';
  const checks = [
    await server.request('OPTIONS', '/api/v1/projects', { headers: { origin, 'access-control-request-method': 'GET', 'access-control-request-headers': 'x-api-key' } }),
    await server.request('OPTIONS', `/api/v1/projects/${projectId}`, { headers: { origin, 'access-control-request-method': 'PUT' } }),
    await server.request('OPTIONS', '/mcp', { headers: { origin, 'access-control-request-method': 'POST' } }),
    await server.request('OPTIONS', '/docs/api-docs/public-v1', { headers: { origin, 'access-control-request-method': 'GET' } }),
    await server.request('OPTIONS', '/healthz', { headers: { origin, 'access-control-request-method': 'GET' } }),
    await server.get('/api/v1/projects', { key: member.key, headers: { origin } }),
    await server.get('/api/v1/projects', { headers: { origin } }),
    await server.get('/healthz', { headers: { origin } }),
    await server.get('/docs/api-docs/public-v1', { key: member.key, headers: { origin } }),
  ];
  for (const res of checks) {
    const cors = [...res.headers.keys()].filter((h) => h.startsWith('access-control-'));
    t.same(cors, [], `no access-control-* headers (status ${res.status})`);
    t.not(res.status, 204, 'a preflight is not answered as if allowed');
    t.ok(res.status < 500);
  }
});

t.test('LABDATA_ENTERPRISE=false: the API, MCP and docs do not exist, probes do', async (t) => {
  const k = { key: communityMember.key };
  const responses = [
    await community.get('/api/v1/projects', k),
    await community.get('/api/v1/projects'),
    await community.get('/api/v1/users', k),
    await community.get('/api/beta/projects', k),
    await community.post('/api/v1/projects', { code: 'x', name: 'x', description: 'x' }, k),
    await community.post('/mcp', { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }, { ...k, headers: { accept: 'application/json, text/event-stream' } }),
    await community.get('/docs/api-docs/public-v1', k),
    await community.get('/docs/swagger-ui', k),
  ];
  // Percent-escapes the router decodes do not get around the gate, and no key means 404 too.
  for (const path of ['/%61pi/v1/projects', '/api/v%31/users', '/api/%62eta/projects', '/%64ocs/api-docs/public-v1', '/%6dcp']) {
    responses.push(await community.get(path, k));
  }
  responses.push(await community.get('/api/v1/nothing'), await community.get('/docs/swagger-ui'));
  for (const res of responses) {
    t.equal(res.status, 404);
    t.match(res.body, { statusCode: 404, error: 'Not Found' });
  }
  t.equal((await community.sql('select count(*)::int as n from project'))[0].n, 0, 'the refused create wrote nothing');
  const healthz = await community.get('/healthz');
  t.equal(healthz.status, 200);
  t.same(healthz.body, { status: 'ok' });
  t.equal((await community.get('/readyz')).status, 200);
});

t.test('/api/beta resolves to the same handlers and marks every response deprecated', async (t) => {
  const successor = (path: string) => `</api/v1${path}>; rel="successor-version"`;
  const list = await server.get('/api/beta/projects?size=5', { key: member.key });
  t.equal(list.status, 200);
  t.same(list.body, (await server.get('/api/v1/projects?size=5', { key: member.key })).body, 'same body as /api/v1');
  const one = await server.get(`/api/beta/projects/${projectId}`, { key: member.key });
  t.equal(one.status, 200);
  t.equal(one.body.id, projectId);

  const cases: [string, Awaited<ReturnType<typeof server.get>>, string][] = [
    ['200 list', list, '/projects'],
    ['200 item', one, `/projects/${projectId}`],
    ['401', await server.get('/api/beta/projects'), '/projects'],
    ['401 bearer', await server.get('/api/beta/projects', { headers: { authorization: `Bearer ${member.key}` } }), '/projects'],
    ['404 record', await server.get(`/api/beta/projects/${crypto.randomUUID()}`, { key: member.key }), ''],
    ['404 route', await server.get('/api/beta/nothing', { key: member.key }), '/nothing'],
    ['400', await server.get('/api/beta/projects?size=0', { key: member.key }), '/projects'],
    ['201', await server.post('/api/beta/projects', { code: 'B-1', name: 'Beta', description: 'x' }, { key: member.key }), '/projects'],
  ];
  for (const [what, res, path] of cases) {
    t.equal(res.headers.get('deprecation'), 'true', `${what}: Deprecation`);
    if (path) t.equal(res.headers.get('link'), successor(path), `${what}: Link names the successor`);
    else t.match(res.headers.get('link'), /^<\/api\/v1\/projects\/[0-9a-f-]{36}>; rel="successor-version"$/, `${what}: Link`);
  }
  t.equal(cases[2][1].text, '', '401 on beta is still empty');
  const encoded = await server.get('/api/%62eta/projects', { key: member.key });
  t.equal(encoded.status, 200, 'the router decodes the mount name');
  t.equal(encoded.headers.get('deprecation'), 'true', 'and it is still the deprecated mount');
  t.equal(encoded.headers.get('link'), successor('/projects'));
  t.equal(cases[7][1].status, 201);
  const withQuery = await server.get('/api/beta/projects?page=0&size=1', { key: member.key });
  t.equal(withQuery.headers.get('link'), successor('/projects'), 'the query string is not part of the successor');
});

t.test('/api/v1 responses carry no deprecation headers', async (t) => {
  for (const res of [
    await server.get('/api/v1/projects', { key: member.key }),
    await server.get('/api/v1/projects'),
    await server.get(`/api/v1/projects/${crypto.randomUUID()}`, { key: member.key }),
    await server.get('/api/v1/nothing', { key: member.key }),
  ]) {
    t.equal(res.headers.get('deprecation'), null, `status ${res.status}`);
    t.equal(res.headers.get('link'), null, `status ${res.status}`);
  }
});

t.test('a connection that never finishes its TLS handshake is closed after the handshake timeout, not held for ever', async (t) => {
  // A client that connects and sends nothing, and one that stops half-way through its
  // ClientHello: each holds a descriptor until the server drops it (README, "Hostile input").
  const { HANDSHAKE_TIMEOUT_MS } = await import('../../app/http/transport.ts');
  const partialHello = Buffer.from('16030100c8010000c40303', 'hex');
  const started = Date.now();
  const closedAfter = (payload?: Buffer) =>
    new Promise<number>((resolve) => {
      const socket = net.connect(portOf(server), '127.0.0.1', () => payload && socket.write(payload));
      socket.on('error', () => {});
      socket.on('data', () => {});
      socket.on('close', () => resolve(Date.now() - started));
      setTimeout(() => socket.destroy(), HANDSHAKE_TIMEOUT_MS + 10_000).unref();
    });
  const [silent, partial] = await Promise.all([closedAfter(), closedAfter(partialHello)]);
  for (const [name, ms] of [['silent', silent], ['partial ClientHello', partial]] as const) {
    t.ok(ms >= HANDSHAKE_TIMEOUT_MS - 500 && ms < HANDSHAKE_TIMEOUT_MS + 5_000, `${name}: closed by the server after ${ms} ms`);
  }
  t.equal((await server.get('/healthz')).status, 200, 'and the server serves on');
});

t.test('TLS: AEAD suites only; a client offering only a CBC-SHA1 suite gets no session', async (t) => {
  const { connect } = await import('node:tls');
  const handshake = (options: object) =>
    new Promise<string>((resolve) => {
      const socket = connect({ host: '127.0.0.1', port: portOf(server), rejectUnauthorized: false, servername: 'localhost', ...options }, () => {
        resolve(socket.getCipher().name);
        socket.end();
      });
      socket.on('error', (err: NodeJS.ErrnoException) => resolve(`refused: ${err.code ?? err.message}`));
    });
  t.match(await handshake({ maxVersion: 'TLSv1.2', ciphers: 'ECDHE-ECDSA-AES128-SHA:ECDHE-RSA-AES128-SHA' }), /^refused/, 'CBC-SHA1 over TLS 1.2: refused');
  t.match(await handshake({ maxVersion: 'TLSv1.2' }), /GCM|CHACHA20/, 'TLS 1.2 negotiates an AEAD suite');
  t.match(await handshake({}), /^TLS_AES|^TLS_CHACHA20/, 'TLS 1.3 as usual');
});
