import t from 'tap';
import { startTestServer, type Member } from '../support/server.ts';

const server = await startTestServer(t);
const org = await server.organization('Acme');
const admin = await server.admin(org);
const alice = await server.member(org);

async function createProject(owner: Member, visibility = 'PRIVATE'): Promise<{ id: string }> {
  const res = await server.post('/api/v1/projects', { code: 'P-1', name: 'Project', description: 'About it', visibility }, { key: owner.key });
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.text}`);
  return res.body;
}

const project = await createProject(alice, 'PUBLIC');

/** Every registered endpoint (reads as GET, writes with their method), params filled with a real id. */
const fill = (path: string) => path.replace(/:[A-Za-z]+/g, project.id);
const requiredQuery = (r: { query?: { required?: string[] } }) => (r.query?.required?.length ? `?${r.query.required.map((name) => `${name}=x`).join('&')}` : '');
const endpoints = [
  // A read that requires query parameters (search's `q`) gets a value for each.
  ...server.kernel.reads.map((r) => ({ method: 'GET', path: fill(r.path) + requiredQuery(r) })),
  ...server.kernel.writes.map((w) => ({ method: w.method as string, path: fill(w.path) })),
];

// Credentials that must all be refused, prepared once (expired, revoked, inactive member).
const expired = await server.key(alice, { expiresAt: '2020-01-01T00:00:00Z' });
const revokedMember = await server.member(org);
await server.revoke(revokedMember.keyId);
const inactive = await server.member(org, { status: 'INACTIVE' });
const [, aliceSecret] = alice.key.split('.');
const wrongSecret = `key_${alice.keyId}.${aliceSecret.slice(0, -1)}${aliceSecret.endsWith('A') ? 'B' : 'A'}`;
const unknownKey = `key_${'a'.repeat(20)}.${aliceSecret}`;

const refused: [string, Record<string, string>][] = [
  ['missing', {}],
  ['malformed X-API-KEY', { 'x-api-key': 'not-a-key' }],
  ['malformed ApiKey authorization', { authorization: 'ApiKey key_short.secret' }],
  ['empty ApiKey authorization', { authorization: 'ApiKey' }],
  ['unknown key id', { 'x-api-key': unknownKey }],
  ['wrong secret', { 'x-api-key': wrongSecret }],
  ['expired', { 'x-api-key': expired.key }],
  ['revoked', { 'x-api-key': revokedMember.key }],
  ['inactive organization user', { 'x-api-key': inactive.key }],
  ['bearer token carrying a valid key', { authorization: `Bearer ${alice.key}` }],
  ['basic authorization', { authorization: `Basic ${Buffer.from('a:b').toString('base64')}` }],
  // Both forms at once must name the same key: a bad key in one is not passed over for the other.
  ['a valid X-API-KEY beside a revoked ApiKey authorization', { 'x-api-key': alice.key, authorization: `ApiKey ${revokedMember.key}` }],
  ['a revoked X-API-KEY beside a valid ApiKey authorization', { 'x-api-key': revokedMember.key, authorization: `ApiKey ${alice.key}` }],
];

async function raw(method: string, path: string, headers: Record<string, string>, body?: unknown) {
  const init: RequestInit = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    (init.headers as Record<string, string>)['content-type'] = 'application/json';
  }
  const res = await fetch(server.url + path, init);
  return { status: res.status, text: await res.text(), headers: res.headers };
}

t.test('the endpoint list covers reads and writes', async (t) => {
  t.ok(endpoints.some((e) => e.method === 'GET' && e.path === `/projects/${project.id}`));
  t.ok(endpoints.some((e) => e.method === 'PUT'));
  t.ok(endpoints.some((e) => e.method === 'DELETE'));
  t.ok(endpoints.some((e) => e.path === '/users'));
});

t.test('every endpoint on /api/v1 and /api/beta refuses bad credentials with 401 and an empty body', async (t) => {
  for (const [what, headers] of refused) {
    for (const mount of ['/api/v1', '/api/beta']) {
      for (const e of endpoints) {
        const body = e.method === 'GET' || e.method === 'DELETE' ? undefined : {};
        const res = await raw(e.method, mount + e.path, headers, body);
        t.equal(res.status, 401, `${what}: ${e.method} ${mount}${e.path}`);
        t.equal(res.text, '', `${what}: ${e.method} ${mount}${e.path} has an empty body`);
      }
      // Unknown routes under the mount are not revealed without a key either.
      const unknown = await raw('GET', `${mount}/no-such-thing`, headers);
      t.equal(unknown.status, 401, `${what}: unknown route under ${mount}`);
      t.equal(unknown.text, '');
    }
  }
  // The project still exists: none of the refused writes went through.
  t.equal((await server.get(`/api/v1/projects/${project.id}`, { key: alice.key })).status, 200);
});

t.test('/mcp and /docs refuse bad credentials with 401 and an empty body', async (t) => {
  const rpc = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} };
  for (const [what, headers] of refused) {
    const mcp = await raw('POST', '/mcp', { ...headers, accept: 'application/json, text/event-stream' }, rpc);
    t.equal(mcp.status, 401, `${what}: POST /mcp`);
    t.equal(mcp.text, '', `${what}: POST /mcp body`);
    for (const path of ['/docs/api-docs/public-v1', '/docs/swagger-ui', '/docs/swagger-ui/', '/docs/swagger-ui/static/swagger-ui.css', '/docs/swagger-ui/static/swagger-initializer.js', '/docs/swagger-ui/json']) {
      const res = await raw('GET', path, headers);
      t.equal(res.status, 401, `${what}: GET ${path}`);
      t.equal(res.text, '', `${what}: GET ${path} body`);
    }
    // Nothing under /docs answers without a key, not even a 404.
    const unknown = await raw('GET', '/docs/no-such-page', headers);
    t.equal(unknown.status, 401, `${what}: unknown /docs page`);
    t.equal(unknown.text, '');
  }
});

t.test('both accepted forms of the key authenticate every read', async (t) => {
  const forms: [string, Record<string, string>][] = [
    ['X-API-KEY', { 'x-api-key': alice.key }],
    ['Authorization: ApiKey', { authorization: `ApiKey ${alice.key}` }],
    ['both, naming the same key', { 'x-api-key': alice.key, authorization: `ApiKey ${alice.key}` }],
  ];
  for (const [what, headers] of forms) {
    for (const e of endpoints.filter((x) => x.method === 'GET')) {
      const res = await raw('GET', '/api/v1' + e.path, headers);
      // Paths are filled with the project's id, so a look-up of another kind is a 404 for that id.
      if (res.status === 404) t.match(JSON.parse(res.text).message, project.id, `${what}: GET /api/v1${e.path} is a plain not-found`);
      else if (res.status === 403) {
        // A read for organization admins only (the webhook subscriptions): authenticated, refused
        // with an empty body, and read by an admin's key given the same way.
        t.equal(res.text, '', `${what}: GET /api/v1${e.path} is an empty 403`);
        const asAdmin = Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, value.replace(alice.key, admin.key)]));
        t.equal((await raw('GET', '/api/v1' + e.path, asAdmin)).status, 200, `${what}: GET /api/v1${e.path} as an admin`);
      } else t.equal(res.status, 200, `${what}: GET /api/v1${e.path}`);
    }
    const mcp = await raw('POST', '/mcp', { ...headers, accept: 'application/json, text/event-stream' }, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });
    t.equal(mcp.status, 200, `${what}: POST /mcp`);
    t.equal((await raw('GET', '/docs/api-docs/public-v1', headers)).status, 200, `${what}: docs`);
  }
});

t.test('API keys and bearer tokens are refused on the internal mount /api/i', async (t) => {
  for (const path of ['/api/i', '/api/i/', '/api/i/projects', `/api/i/projects/${project.id}`]) {
    const variants: Record<string, string>[] = [{ 'x-api-key': alice.key }, { authorization: `ApiKey ${alice.key}` }, { authorization: `Bearer ${alice.key}` }, {}];
    for (const headers of variants) {
      const res = await raw('GET', path, headers);
      t.equal(res.status, 401, `GET ${path} with ${Object.keys(headers).join(',') || 'nothing'}`);
      t.equal(res.text, '');
    }
  }
  const post = await raw('POST', '/api/i/projects', { 'x-api-key': alice.key }, { code: 'x' });
  t.equal(post.status, 401);
  t.equal(post.text, '');
});

t.test('a revoked key gets 401 on the very next request', async (t) => {
  const m = await server.member(org);
  t.equal((await server.get('/api/v1/projects', { key: m.key })).status, 200);
  await server.revoke(m.keyId);
  const after = await server.get('/api/v1/projects', { key: m.key });
  t.equal(after.status, 401);
  t.equal(after.text, '');
  const mcp = await raw('POST', '/mcp', { 'x-api-key': m.key, accept: 'application/json, text/event-stream' }, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });
  t.equal(mcp.status, 401);
});

t.test('another key of the same member keeps working after one is revoked', async (t) => {
  const m = await server.member(org);
  const second = await server.key(m);
  await server.revoke(m.keyId);
  t.equal((await server.get('/api/v1/projects', { key: m.key })).status, 401);
  t.equal((await server.get('/api/v1/projects', { key: second.key })).status, 200);
});

t.test('an organization user set INACTIVE loses access on the next request', async (t) => {
  const m = await server.member(org);
  t.equal((await server.get('/api/v1/users', { key: m.key })).status, 200);
  await server.sql(`update organization_user set status = 'INACTIVE' where id = ?`, [m.organizationUserId]);
  const res = await server.get('/api/v1/users', { key: m.key });
  t.equal(res.status, 401);
  t.equal(res.text, '');
});

t.test('an INVITED organization user cannot authenticate until ACTIVE', async (t) => {
  // README: "Organization user statuses: `ACTIVE`, `INVITED`, `INACTIVE` (only `ACTIVE` users can authenticate)".
  const m = await server.member(org, { status: 'INVITED' });
  const res = await server.get('/api/v1/users', { key: m.key });
  t.equal(res.status, 401, 'INVITED: REST');
  t.equal(res.text, '');
  const mcp = await raw('POST', '/mcp', { 'x-api-key': m.key, accept: 'application/json, text/event-stream' }, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });
  t.equal(mcp.status, 401, 'INVITED: /mcp');
  await server.sql(`update organization_user set status = 'ACTIVE' where id = ?`, [m.organizationUserId]);
  t.equal((await server.get('/api/v1/users', { key: m.key })).status, 200, 'the same key works once the user is ACTIVE');
  await server.sql(`update organization_user set status = 'INVITED' where id = ?`, [m.organizationUserId]);
  t.equal((await server.get('/api/v1/users', { key: m.key })).status, 401, 'and is refused again on the next request when set back to INVITED');
});

t.test('removing the admin role applies to the next request', async (t) => {
  const boss = await server.admin(org);
  const priv = await createProject(alice, 'PRIVATE');
  const seen = await server.get(`/api/v1/projects/${priv.id}`, { key: boss.key });
  t.equal(seen.status, 200, 'an admin sees another member\'s PRIVATE project');
  await server.setRoles(boss.organizationUserId, ['ORGANIZATION_USER']);
  const hidden = await server.get(`/api/v1/projects/${priv.id}`, { key: boss.key });
  t.equal(hidden.status, 404, 'without the role the project is not viewable');
  t.match(hidden.body, { statusCode: 404 });
  await server.setRoles(boss.organizationUserId, ['ORGANIZATION_ADMIN']);
  t.equal((await server.get(`/api/v1/projects/${priv.id}`, { key: boss.key })).status, 200, 'granting it back applies at once too');
});

t.test('a successful request records lastUsedAt on the key', async (t) => {
  const m = await server.member(org);
  const before = await server.sql<{ last_used_at: Date | null }>('select last_used_at from api_key where id = ?', [m.keyId]);
  t.equal(before[0].last_used_at, null);
  t.equal((await server.get('/api/v1/projects', { key: m.key })).status, 200);
  let lastUsed: Date | null = null;
  // Written without blocking the request: wait for it.
  await server.waitFor(async () => {
    [{ last_used_at: lastUsed }] = await server.sql<{ last_used_at: Date | null }>('select last_used_at from api_key where id = ?', [m.keyId]);
    return lastUsed !== null;
  }, 10_000, 'the last_used_at write');
  t.ok(lastUsed, 'last_used_at is set');
  t.ok(Math.abs(new Date(lastUsed!).getTime() - Date.now()) < 5 * 60_000, 'last_used_at is about now');
});

t.test('a refused key does not record lastUsedAt', async (t) => {
  const m = await server.member(org);
  const wrong = `key_${m.keyId}.${'A'.repeat(43)}`;
  t.equal((await server.get('/api/v1/projects', { key: wrong })).status, 401);
  await new Promise((r) => setTimeout(r, 200));
  const [row] = await server.sql<{ last_used_at: Date | null }>('select last_used_at from api_key where id = ?', [m.keyId]);
  t.equal(row.last_used_at, null);
});

t.test('a key is bound to its organization: other organizations\' records are 404', async (t) => {
  const other = await server.organization();
  const outsider = await server.admin(other);
  const res = await server.get(`/api/v1/projects/${project.id}`, { key: outsider.key });
  t.equal(res.status, 404);
  const list = await server.get('/api/v1/projects', { key: outsider.key });
  t.equal(list.body.totalElements, 0);
});

t.test('/healthz and /readyz need no key and say nothing beyond a status (and the databases\' state)', async (t) => {
  for (const path of ['/healthz', '/readyz']) {
    const res = await server.get(path);
    t.equal(res.status, 200, path);
    t.same(Object.keys(res.body), path === '/healthz' ? ['status'] : ['status', 'databases'], `${path} has only a status`);
    t.type(res.body.status, 'string');
  }
  // Each database by a generic name and its state: no address, user or database name.
  const ready = await server.get('/readyz');
  t.same(ready.body.databases, [{ name: 'primary', role: 'primary', up: true }]);
});
