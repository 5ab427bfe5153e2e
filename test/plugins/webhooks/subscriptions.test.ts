// Webhook subscriptions (plugins/webhooks): CRUD for organization admins only, the outbound URL
// rules and event type filters (400s naming the field), the secret shown only on create and
// rotation and stored sealed, and the OpenAPI document of the endpoints and the delivery payload.
import t from 'tap';
import { startTestServer, testCast, TEST_SECRET_KEY } from '../../support/server.ts';
import { decryptSecret } from '../../../core/secrets.ts';

const server = await startTestServer(t, { plugins: ['users', 'projects', 'studies', 'activity', 'webhooks'] });
const { admin, alice, outsider } = await testCast(server);
// A public address given as such: the tests need no DNS (nothing is sent: no job workers here).
const URL_OK = 'https://8.8.8.8/hooks/labdata';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

async function create(body: Record<string, unknown> = {}) {
  const res = await server.post('/api/v1/webhooks', { url: URL_OK, ...body }, { key: admin.key });
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.text}`);
  return res.body;
}

t.test('create: 201 with the subscription and its secret, shown this once', async (t) => {
  const res = await server.post('/api/v1/webhooks', { url: URL_OK, eventTypes: ['study.*', 'project.created'], categories: ['RESEARCH'], description: 'LIMS' }, { key: admin.key });
  t.equal(res.status, 201);
  t.same(Object.keys(res.body).sort(), ['active', 'categories', 'createdAt', 'createdById', 'description', 'disabledAt', 'eventTypes', 'id', 'paused', 'secret', 'updatedAt', 'url']);
  t.match(res.body, { id: UUID, url: URL_OK, eventTypes: ['study.*', 'project.created'], categories: ['RESEARCH'], description: 'LIMS', active: true, paused: false, createdById: admin.organizationUserId, disabledAt: null });
  t.match(res.headers.get('location'), `/api/v1/webhooks/${res.body.id}`);
  // whsec_ + base64 of at least 24 random bytes.
  t.match(res.body.secret, /^whsec_[A-Za-z0-9+/]+=*$/);
  t.ok(Buffer.from(res.body.secret.slice(6), 'base64').length >= 24);

  const got = await server.get(`/api/v1/webhooks/${res.body.id}`, { key: admin.key });
  t.equal(got.status, 200);
  t.notOk('secret' in got.body, 'never shown again');
  const { secret: _secret, ...rest } = res.body;
  t.same(got.body, rest);
  const list = await server.get('/api/v1/webhooks', { key: admin.key });
  t.ok(list.body.content.some((w: any) => w.id === res.body.id && !('secret' in w)));

  // Stored sealed (AES-GCM with the deployment key), never in clear, never hashed: signing needs it.
  const [row] = await server.sql<{ secret: string }>('select secret from webhook_subscription where id = ?', [res.body.id]);
  t.notMatch(row.secret, res.body.secret.slice(6));
  t.equal(JSON.parse(decryptSecret(row.secret, Buffer.from(TEST_SECRET_KEY, 'base64'))), res.body.secret);
  t.same(
    await server.sql(`select event_type, category, data from activity where event_type = 'webhook.created' and data->>'webhookId' = ?`, [res.body.id]),
    [{ event_type: 'webhook.created', category: 'ADMINISTRATIVE', data: { webhookId: res.body.id } }],
  );
});

t.test('an Idempotency-Key replay shows the secret again, and the stored response is sealed too', async (t) => {
  const headers = { 'idempotency-key': 'hook-1' };
  const first = await server.post('/api/v1/webhooks', { url: URL_OK }, { key: admin.key, headers });
  const again = await server.post('/api/v1/webhooks', { url: URL_OK }, { key: admin.key, headers });
  t.equal(again.status, 201);
  t.equal(again.headers.get('idempotent-replayed'), 'true');
  t.same(again.body, first.body);
  const [stored] = await server.sql<{ response_body: string }>(`select response_body from idempotency_key where key = 'hook-1'`);
  t.notMatch(stored.response_body, first.body.secret.slice(6), 'the secret is not in the table in clear');
  t.match(stored.response_body, /^v1\./);
});

t.test('admins only: others 403 (empty body) on every route; another organization\'s subscription is a 404', async (t) => {
  const hook = await create();
  const routes: [string, string, unknown?][] = [
    ['GET', '/api/v1/webhooks'],
    ['POST', '/api/v1/webhooks', { url: URL_OK }],
    ['GET', `/api/v1/webhooks/${hook.id}`],
    ['PUT', `/api/v1/webhooks/${hook.id}`, { description: 'x' }],
    ['DELETE', `/api/v1/webhooks/${hook.id}`],
    ['POST', `/api/v1/webhooks/${hook.id}/rotate-secret`],
    ['POST', `/api/v1/webhooks/${hook.id}/test`],
    ['GET', `/api/v1/webhooks/${hook.id}/deliveries`],
    ['POST', `/api/v1/webhooks/${hook.id}/deliveries/${hook.id}/retry`],
  ];
  for (const [method, path, body] of routes) {
    const res = await server.request(method, path, { key: alice.key, body });
    t.equal(res.status, 403, `${method} ${path}`);
    t.equal(res.text, '', 'empty body');
    const other = await server.request(method, path, { key: outsider.key, body });
    if (path === '/api/v1/webhooks') t.not(other.status, 403, `${method} ${path}: the other organization's admin`);
    else t.equal(other.status, 404, `${method} ${path}: not visible to another organization's admin`);
  }
  t.equal((await server.get(`/api/v1/webhooks/${hook.id}`, { key: admin.key })).status, 200, 'all still there');
  const theirs = await server.get('/api/v1/webhooks', { key: outsider.key });
  t.notOk(theirs.body.content.some((w: any) => w.id === hook.id), 'lists show the caller\'s organization only');
});

t.test('bad URLs are a 400 naming url', async (t) => {
  const cases: [unknown, RegExp][] = [
    ['http://8.8.8.8/hook', /https/],
    ['ftp://8.8.8.8/hook', /https/],
    ['not a url', /https URL/],
    ['https://user:pw@8.8.8.8/hook', /user name or password/],
    ['https://127.0.0.1/hook', /loopback/],
    ['https://localhost:8443/hook', /loopback/],
    ['https://10.1.2.3/hook', /private/],
    ['https://192.168.0.10/hook', /private/],
    ['https://[::1]/hook', /loopback/],
    ['https://[::ffff:10.0.0.1]/hook', /private/],
    ['https://169.254.169.254/latest/meta-data', /metadata|link-local/],
    ['https://[fe80::1]/hook', /link-local/],
    ['https://0.0.0.0/hook', /not a routable/],
    ['https://no-such-host.invalid/hook', /does not resolve/],
    [42, /string/],
  ];
  for (const [url, message] of cases) {
    const res = await server.post('/api/v1/webhooks', { url }, { key: admin.key });
    t.equal(res.status, 400, String(url));
    t.equal(res.body.errors?.[0]?.field, 'url', String(url));
    t.match(res.body.errors?.[0]?.message, message, String(url));
  }
  const hook = await create();
  const put = await server.put(`/api/v1/webhooks/${hook.id}`, { url: 'https://10.0.0.1/' }, { key: admin.key });
  t.equal(put.status, 400);
  t.equal(put.body.errors[0].field, 'url');
});

t.test('eventTypes: exact declared types or a prefix with .*; unknown entries are a 400 naming eventTypes', async (t) => {
  for (const eventTypes of [['study.creatd'], ['nothing.*'], ['*'], ['study'], ['.*'], []]) {
    const res = await server.post('/api/v1/webhooks', { url: URL_OK, eventTypes }, { key: admin.key });
    t.equal(res.status, 400, JSON.stringify(eventTypes));
    t.equal(res.body.errors[0].field, 'eventTypes', JSON.stringify(eventTypes));
  }
  const categories = await server.post('/api/v1/webhooks', { url: URL_OK, categories: ['RESEARCH', 'GOSSIP'] }, { key: admin.key });
  t.equal(categories.status, 400);
  t.match(categories.body.errors[0].field, /^categories/);
  const ok = await create({ eventTypes: ['study.created', 'study.created', 'webhook.*'] });
  t.same(ok.eventTypes, ['study.created', 'webhook.*'], 'repeats kept once');
  t.equal((await create({ eventTypes: null, categories: null })).eventTypes, null, 'null: every event type');
});

t.test('update merges; null clears a filter; activity webhook.updated names the fields changed', async (t) => {
  const hook = await create({ eventTypes: ['project.created'], description: 'one' });
  const res = await server.put(`/api/v1/webhooks/${hook.id}`, { eventTypes: null, description: 'two', active: false }, { key: admin.key });
  t.equal(res.status, 200);
  t.match(res.body, { url: URL_OK, eventTypes: null, description: 'two', active: false });
  t.ok(res.body.updatedAt > hook.updatedAt);
  t.same(
    await server.sql(`select data from activity where event_type = 'webhook.updated' and data->>'webhookId' = ?`, [hook.id]),
    [{ data: { webhookId: hook.id, fields: ['eventTypes', 'description', 'active'] } }],
  );
  const same = await server.put(`/api/v1/webhooks/${hook.id}`, { description: 'two' }, { key: admin.key });
  t.equal(same.status, 200);
  t.equal((await server.sql(`select 1 from activity where event_type = 'webhook.updated' and data->>'webhookId' = ?`, [hook.id])).length, 1, 'no change, no record');
  t.equal((await server.put(`/api/v1/webhooks/${hook.id}`, { active: 'yes' }, { key: admin.key })).status, 400);
});

t.test('rotate: a new secret, shown once; delete: 204, then 404', async (t) => {
  const hook = await create();
  const rotated = await server.post(`/api/v1/webhooks/${hook.id}/rotate-secret`, undefined, { key: admin.key });
  t.equal(rotated.status, 200);
  t.same(Object.keys(rotated.body), ['secret']);
  t.not(rotated.body.secret, hook.secret);
  const [row] = await server.sql<{ secret: string; previous_secret: string; expires_in: number }>(
    `select secret, previous_secret, extract(epoch from previous_secret_expires_at - now())::int as expires_in from webhook_subscription where id = ?`, [hook.id]);
  const key = Buffer.from(TEST_SECRET_KEY, 'base64');
  t.equal(JSON.parse(decryptSecret(row.secret, key)), rotated.body.secret);
  t.equal(JSON.parse(decryptSecret(row.previous_secret, key)), hook.secret, 'the old one signs for 24 hours more');
  t.ok(row.expires_in > 86_000 && row.expires_in <= 86_400);

  t.equal((await server.delete(`/api/v1/webhooks/${hook.id}`, { key: admin.key })).status, 204);
  t.equal((await server.get(`/api/v1/webhooks/${hook.id}`, { key: admin.key })).status, 404);
  t.equal((await server.delete(`/api/v1/webhooks/${hook.id}`, { key: admin.key })).status, 404);
  t.equal((await server.post(`/api/v1/webhooks/${hook.id}/rotate-secret`, undefined, { key: admin.key })).status, 404);
});

t.test('the delivery log: filter status (unknown is a 400 naming status), a delivery of another subscription is a 404', async (t) => {
  const hook = await create();
  const other = await create();
  const test = await server.post(`/api/v1/webhooks/${hook.id}/test`, undefined, { key: admin.key });
  t.equal(test.status, 200);
  t.match(test.body, { id: UUID, eventType: 'webhook.test', status: 'PENDING', attempts: 0, lastAttemptAt: null, lastResponseStatus: null });
  const log = await server.get(`/api/v1/webhooks/${hook.id}/deliveries?status=PENDING`, { key: admin.key });
  t.equal(log.status, 200);
  t.equal(log.body.totalElements, 1);
  t.same(log.body.content, [test.body]);
  t.equal((await server.get(`/api/v1/webhooks/${hook.id}/deliveries?status=DELIVERED`, { key: admin.key })).body.totalElements, 0);
  const bad = await server.get(`/api/v1/webhooks/${hook.id}/deliveries?status=LOST`, { key: admin.key });
  t.equal(bad.status, 400);
  t.equal(bad.body.errors[0].field, 'status');
  t.equal((await server.get(`/api/v1/webhooks/${other.id}/deliveries/${test.body.id}`, { key: admin.key })).status, 404);
  t.equal((await server.post(`/api/v1/webhooks/${other.id}/deliveries/${test.body.id}/retry`, undefined, { key: admin.key })).status, 404);
  const [event] = await server.sql<{ id: string }>(`select id from activity where event_type = 'webhook.test' and data->>'webhookId' = ?`, [hook.id]);
  t.equal(test.body.eventId, event.id, 'the delivery carries the recorded webhook.test event');
});

t.test('the OpenAPI document: the subscription endpoints and the delivery payload (a callback of create_webhook)', async (t) => {
  const doc = (await server.get('/docs/api-docs/public-v1', { key: admin.key })).body;
  for (const [path, methods] of Object.entries({
    '/api/v1/webhooks': ['get', 'post'],
    '/api/v1/webhooks/{id}': ['get', 'put', 'delete'],
    '/api/v1/webhooks/{id}/rotate-secret': ['post'],
    '/api/v1/webhooks/{id}/test': ['post'],
    '/api/v1/webhooks/{id}/deliveries': ['get'],
    '/api/v1/webhooks/{id}/deliveries/{deliveryId}/retry': ['post'],
    '/api/v1/activity/changes': ['get'],
  })) {
    for (const method of methods) t.ok(doc.paths[path]?.[method], `${method.toUpperCase()} ${path}`);
  }
  const create = doc.paths['/api/v1/webhooks'].post;
  t.equal(create.responses['403'].$ref, '#/components/responses/Forbidden');
  const callback = create.callbacks.event['{$request.body#/url}'].post;
  t.same(callback.parameters.map((p: any) => p.name), ['webhook-id', 'webhook-timestamp', 'webhook-signature']);
  t.equal(callback.requestBody.content['application/json'].schema.$ref, '#/components/schemas/WebhookEvent');
  const event = doc.components.schemas.WebhookEvent;
  t.same(event.required.sort(), ['data', 'timestamp', 'type']);
  t.equal(event.properties.data.$ref, '#/components/schemas/Activity', 'data: the activity record, as GET /activity shows it');
  t.ok(doc.components.schemas.CreatedWebhook.properties.secret);
  t.notOk(doc.components.schemas.Webhook.properties.secret);
  t.ok(doc.components.schemas.WebhookDelivery);
});
