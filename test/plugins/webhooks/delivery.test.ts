// Webhook deliveries (plugins/webhooks): signed as Standard Webhooks say and verified with the
// `standardwebhooks` package, as a receiver would; filters; retries until a 2xx, then FAILED;
// the delivery log, retry and test endpoints; rotation (two signatures); who receives what
// (PRIVATE projects, a creator no longer admin pauses); nothing for a rolled-back write or for
// history moved in by an import; 5 days of failures set a subscription inactive.
// Receivers listen on loopback (LABDATA_WEBHOOK_ALLOW_PRIVATE=true); retries come after 0.2 s.
import t, { type Test } from 'tap';
import pg from 'pg';
import { createProject, startTestServer, testCast, type Member } from '../../support/server.ts';
import { Receiver, verify } from './receiver.ts';

const server = await startTestServer(t, {
  plugins: ['users', 'projects', 'studies', 'activity', 'webhooks'],
  jobs: true,
  env: { LABDATA_WEBHOOK_ALLOW_PRIVATE: 'true', LABDATA_WEBHOOK_RETRY_DELAYS: '0.2,0.2,0.2' },
});
const { org, admin, alice } = await testCast(server);
const other = await server.admin(org);


/** A subscription of `by` to `receiver`, deleted when the subtest ends (so it receives no later test's events). */
async function subscribe(t: Test, receiver: Receiver, body: Record<string, unknown> = {}, by: Member = admin) {
  const res = await server.post('/api/v1/webhooks', { url: receiver.url, ...body }, { key: by.key });
  if (res.status !== 201) throw new Error(`subscribe failed: ${res.status} ${res.text}`);
  t.teardown(() => server.delete(`/api/v1/webhooks/${res.body.id}`, { key: admin.key }));
  return res.body as { id: string; secret: string };
}

/** The id of the activity record of a project's creation. */
async function createdEvent(projectId: string): Promise<string> {
  const [row] = await server.sql<{ id: string }>(`select id from activity where event_type = 'project.created' and project_id = ?`, [projectId]);
  return row.id;
}

const forEvent = (receiver: Receiver, eventId: string) => receiver.received.filter((r) => r.json?.data?.id === eventId);

async function deliveryOf(hookId: string, eventId: string) {
  const [row] = await server.sql<{ id: string }>('select id from webhook_delivery where subscription_id = ? and activity_id = ?', [hookId, eventId]);
  return row ? (await server.get(`/api/v1/webhooks/${hookId}/deliveries/${row.id}`, { key: other.key })).body : undefined;
}

async function waitForDelivery(hookId: string, eventId: string, status: string, ms = 15_000) {
  await server.waitFor(async () => (await deliveryOf(hookId, eventId))?.status === status, ms, `delivery of ${eventId} ${status}`);
  return deliveryOf(hookId, eventId);
}

t.test('a delivery: POST, JSON, the Standard Webhooks headers, verified with standardwebhooks; data exactly as GET /activity shows it', async (t) => {
  const receiver = await Receiver.start(t);
  const hook = await subscribe(t, receiver, { eventTypes: ['project.created'] });
  const before = Math.floor(Date.now() / 1000);
  const project = await createProject(server, admin, 'PUBLIC');
  const eventId = await createdEvent(project.id);
  await receiver.waitFor(() => forEvent(receiver, eventId).length === 1);
  const [got] = forEvent(receiver, eventId);
  t.match(got.headers['content-type'], /^application\/json/);
  t.same(verify(hook.secret, got), got.json, 'verified by standardwebhooks with the subscription secret');
  const delivery = await waitForDelivery(hook.id, eventId, 'DELIVERED');
  t.equal(got.headers['webhook-id'], delivery.id, 'webhook-id: the delivery id');
  t.ok(Number(got.headers['webhook-timestamp']) >= before && Number(got.headers['webhook-timestamp']) <= Date.now() / 1000 + 1, 'webhook-timestamp: Unix seconds of the attempt');
  t.match(got.headers['webhook-signature'], /^v1,[A-Za-z0-9+/]+=*$/);
  t.same(Object.keys(got.json), ['type', 'timestamp', 'data']);
  const record = await server.get(`/api/v1/activity/${eventId}`, { key: admin.key });
  t.same(got.json.data, record.body, 'the record as GET /api/v1/activity/{id} answers it');
  t.same((await server.get('/api/v1/activity?size=50', { key: admin.key })).body.content.find((a: any) => a.id === eventId), got.json.data, 'and as the list does');
  t.equal(got.json.type, 'project.created');
  t.equal(got.json.timestamp, record.body.date);
  t.match(delivery, { eventId, eventType: 'project.created', status: 'DELIVERED', attempts: 1, lastResponseStatus: 200, lastError: null, nextAttemptAt: null });
  t.equal(receiver.received.length, 1, 'only the event types subscribed to');
});

t.test('filters: an exact type, a prefix with .*, categories; a subscription made later gets only later events', async (t) => {
  const early = await createProject(server, admin, 'PUBLIC');
  const prefix = await Receiver.start(t);
  const category = await Receiver.start(t);
  await subscribe(t, prefix, { eventTypes: ['study.*'] });
  await subscribe(t, category, { categories: ['ADMINISTRATIVE'] });
  const study = await server.post('/api/v1/studies', { projectId: early.id, name: 'S' }, { key: admin.key });
  await server.put(`/api/v1/studies/${study.body.id}`, { name: 'S2' }, { key: admin.key });
  const third = await Receiver.start(t);
  const thirdHook = await subscribe(t, third);
  await prefix.waitFor(() => prefix.received.length >= 2);
  await category.waitFor(() => category.of('webhook.created').some((r) => r.json.data.data.webhookId === thirdHook.id));
  t.same(prefix.received.map((r) => r.json.type).sort(), ['study.created', 'study.updated']);
  t.ok(category.received.every((r) => r.json.data.category === 'ADMINISTRATIVE'));
  const late = await createProject(server, admin, 'PUBLIC');
  await third.waitFor(() => third.of('project.created').length === 1);
  t.equal(third.of('project.created')[0].json.data.projectId, late.id, 'not the project created before it existed');
  t.equal(third.of('study.created').length, 0);
});

t.test('receiver down: 503 for a while, then 200: every event arrives, each verified', async (t) => {
  const receiver = await Receiver.start(t);
  let refused = 0;
  receiver.answer = () => (refused++ < 5 ? 503 : 200);
  const hook = await subscribe(t, receiver, { eventTypes: ['project.created'] });
  const events = [];
  for (let i = 0; i < 3; i++) events.push(await createdEvent((await createProject(server, admin, 'PUBLIC')).id));
  for (const eventId of events) {
    const delivery = await waitForDelivery(hook.id, eventId, 'DELIVERED');
    t.equal(delivery.lastResponseStatus, 200);
    const attempts = forEvent(receiver, eventId);
    t.equal(attempts.length, delivery.attempts, 'one request per attempt');
    t.ok(attempts.every((r) => verify(hook.secret, r)), 'every attempt verifies');
    t.equal(new Set(attempts.map((r) => r.headers['webhook-id'])).size, 1, 'the same webhook-id on every attempt');
  }
  t.ok(receiver.received.filter((r) => r.json.type === 'project.created').length > 3, 'some were retried');
  const [row] = await server.sql<{ failing_since: string | null }>('select failing_since from webhook_subscription where id = ?', [hook.id]);
  t.equal(row.failing_since, null, 'a delivered attempt ends the failing streak');
});

t.test('retries used up: FAILED; the retry endpoint sends it again now; the test endpoint sends webhook.test to that subscription alone', async (t) => {
  const receiver = await Receiver.start(t);
  receiver.answer = () => 500;
  const hook = await subscribe(t, receiver, { eventTypes: ['project.created'] });
  const bystander = await Receiver.start(t);
  await subscribe(t, bystander);
  const eventId = await createdEvent((await createProject(server, admin, 'PUBLIC')).id);
  const failed = await waitForDelivery(hook.id, eventId, 'FAILED');
  t.match(failed, { status: 'FAILED', attempts: 4, lastResponseStatus: 500, lastError: 'HTTP 500', nextAttemptAt: null }, 'the first attempt and one per retry delay');
  t.equal(forEvent(receiver, eventId).length, 4);
  const log = await server.get(`/api/v1/webhooks/${hook.id}/deliveries?status=FAILED`, { key: admin.key });
  t.same(log.body.content.map((d: any) => d.id), [failed.id]);

  receiver.answer = () => 200;
  const retried = await server.post(`/api/v1/webhooks/${hook.id}/deliveries/${failed.id}/retry`, undefined, { key: admin.key });
  t.equal(retried.status, 200);
  t.match(retried.body, { id: failed.id, status: 'PENDING', attempts: 4 });
  const delivered = await waitForDelivery(hook.id, eventId, 'DELIVERED');
  t.match(delivered, { attempts: 5, lastResponseStatus: 200, lastError: null });
  t.same(verify(hook.secret, forEvent(receiver, eventId)[4]), forEvent(receiver, eventId)[4].json);

  const test = await server.post(`/api/v1/webhooks/${hook.id}/test`, undefined, { key: admin.key });
  t.equal(test.status, 200);
  t.match(test.body, { eventType: 'webhook.test', status: 'PENDING' });
  await receiver.waitFor(() => receiver.of('webhook.test').length === 1);
  const ping = receiver.of('webhook.test')[0];
  t.ok(verify(hook.secret, ping));
  t.equal(ping.headers['webhook-id'], test.body.id);
  t.same(ping.json.data.data, { webhookId: hook.id });
  await waitForDelivery(hook.id, test.body.eventId, 'DELIVERED');
  t.equal(bystander.of('webhook.test').length, 0, 'the other subscription, subscribed to everything, never gets it');

  const unreachable = await server.put(`/api/v1/webhooks/${hook.id}`, { url: 'http://127.0.0.1:9/closed' }, { key: admin.key });
  t.equal(unreachable.status, 200);
  const again = await server.post(`/api/v1/webhooks/${hook.id}/test`, undefined, { key: admin.key });
  const noAnswer = await server.waitFor(async () => (await deliveryOf(hook.id, again.body.eventId))?.attempts >= 1).then(() => deliveryOf(hook.id, again.body.eventId));
  t.match(noAnswer, { lastResponseStatus: null, lastError: /not reached \(ECONNREFUSED\)/ }, 'no answer: retried too');
});

t.test('redirects are not followed; an answer is read up to 64 KiB', async (t) => {
  const receiver = await Receiver.start(t);
  const target = await Receiver.start(t);
  receiver.answer = (r) => (r.json.type === 'webhook.test' && receiver.of('webhook.test').length === 1 ? { status: 307, headers: { location: target.url } } : { status: 200, body: Buffer.alloc(1 << 20, 'x') });
  const hook = await subscribe(t, receiver, { eventTypes: ['project.created'] });
  const first = await server.post(`/api/v1/webhooks/${hook.id}/test`, undefined, { key: admin.key });
  const redirected = await server.waitFor(async () => (await deliveryOf(hook.id, first.body.eventId))?.attempts >= 1).then(() => deliveryOf(hook.id, first.body.eventId));
  t.match(redirected, { lastResponseStatus: 307, lastError: 'HTTP 307' }, 'a 3xx is a failed attempt');
  const delivered = await waitForDelivery(hook.id, first.body.eventId, 'DELIVERED');
  t.equal(delivered.lastResponseStatus, 200, 'the retry got a 200 with a 1 MiB body: delivered, the body not read past 64 KiB');
  t.equal(target.received.length, 0, 'the redirect target never heard of it');
});

t.test('rotation: for 24 hours each delivery carries a signature with the new secret and one with the old', async (t) => {
  const receiver = await Receiver.start(t);
  const hook = await subscribe(t, receiver, { eventTypes: ['webhook.test'] });
  const rotated = (await server.post(`/api/v1/webhooks/${hook.id}/rotate-secret`, undefined, { key: admin.key })).body.secret;
  await server.post(`/api/v1/webhooks/${hook.id}/test`, undefined, { key: admin.key });
  await receiver.waitFor(() => receiver.received.length === 1);
  const both = receiver.received[0];
  t.equal(both.headers['webhook-signature'].split(' ').length, 2, 'two signatures, space-separated');
  t.ok(verify(rotated, both), 'the new secret verifies');
  t.ok(verify(hook.secret, both), 'the old one too, for receivers not yet switched');

  // 24 hours later (the old secret's end, moved to the past): the new secret alone.
  await server.sql(`update webhook_subscription set previous_secret_expires_at = now() - interval '1 second' where id = ?`, [hook.id]);
  await server.post(`/api/v1/webhooks/${hook.id}/test`, undefined, { key: admin.key });
  await receiver.waitFor(() => receiver.received.length === 2);
  const one = receiver.received[1];
  t.equal(one.headers['webhook-signature'].split(' ').length, 1);
  t.ok(verify(rotated, one));
  t.throws(() => verify(hook.secret, one), /No matching signature/);
});

t.test('who receives what: a PRIVATE project\'s events only if the creator is a member; a creator no longer admin or deactivated pauses it', async (t) => {
  const receiver = await Receiver.start(t);
  const hook = await subscribe(t, receiver, { eventTypes: ['project.*'] });
  // `other` (an admin too) creates a PRIVATE project the subscription's creator is not a member of.
  const secret = await createProject(server, other, 'PRIVATE');
  const open = await createProject(server, other, 'PUBLIC');
  const secretEvent = await createdEvent(secret.id);
  const openEvent = await createdEvent(open.id);
  await receiver.waitFor(() => forEvent(receiver, openEvent).length === 1);
  await server.waitFor(async () => !(await deliveryOf(hook.id, secretEvent)), 5_000, 'the PRIVATE project\'s delivery to be dropped');
  t.equal(forEvent(receiver, secretEvent).length, 0, 'never sent');
  t.notOk((await server.get(`/api/v1/webhooks/${hook.id}/deliveries?size=200`, { key: admin.key })).body.content.some((d: any) => d.eventId === secretEvent), 'nor in the log');

  await server.grant(secret.id, admin);
  const renamed = await server.put(`/api/v1/projects/${secret.id}`, { name: 'Renamed' }, { key: other.key });
  t.equal(renamed.status, 200);
  await receiver.waitFor(() => receiver.received.some((r) => r.json.data.projectId === secret.id), 10_000, 'the member\'s event');
  t.pass('once a member, the creator\'s subscription receives the PRIVATE project\'s events');

  // No longer admin: paused, deliveries wait (PENDING), nothing is sent.
  await server.setRoles(admin.organizationUserId, ['ORGANIZATION_USER']);
  t.teardown(() => server.setRoles(admin.organizationUserId, ['ORGANIZATION_ADMIN']));
  t.equal((await server.get(`/api/v1/webhooks/${hook.id}`, { key: other.key })).body.paused, true);
  const whilePaused = await createdEvent((await createProject(server, other, 'PUBLIC')).id);
  await server.waitFor(async () => (await server.sql(`select 1 from webhook_delivery where activity_id = ? and claim_id is not null`, [whilePaused])).length === 1, 5_000, 'the deliverer to look at it');
  await new Promise((r) => setTimeout(r, 500));
  t.equal(forEvent(receiver, whilePaused).length, 0, 'nothing sent while paused');
  t.match(await deliveryOf(hook.id, whilePaused), { status: 'PENDING', attempts: 0 }, 'it waits, no attempt counted');

  // Admin again: what waited is delivered.
  await server.setRoles(admin.organizationUserId, ['ORGANIZATION_ADMIN']);
  await receiver.waitFor(() => forEvent(receiver, whilePaused).length === 1, 10_000, 'the held delivery');
  t.equal((await server.get(`/api/v1/webhooks/${hook.id}`, { key: admin.key })).body.paused, false);

  // Deactivated: paused too.
  await server.sql(`update organization_user set status = 'INACTIVE' where id = ?`, [admin.organizationUserId]);
  const whileInactive = await createdEvent((await createProject(server, other, 'PUBLIC')).id);
  await server.waitFor(async () => (await server.sql(`select 1 from webhook_delivery where activity_id = ? and claim_id is not null`, [whileInactive])).length === 1, 5_000, 'the deliverer to look at it');
  t.equal((await server.get(`/api/v1/webhooks/${hook.id}`, { key: other.key })).body.paused, true);
  await new Promise((r) => setTimeout(r, 500));
  t.equal(forEvent(receiver, whileInactive).length, 0, 'nothing sent while the creator is deactivated');
  await server.sql(`update organization_user set status = 'ACTIVE' where id = ?`, [admin.organizationUserId]);
  await receiver.waitFor(() => forEvent(receiver, whileInactive).length === 1, 10_000, 'the held delivery');
});

t.test('a rolled-back write delivers nothing; history moved in by an import is never delivered', async (t) => {
  const receiver = await Receiver.start(t);
  await subscribe(t, receiver);
  const client = new pg.Client({ connectionString: server.databaseUrl });
  await client.connect();
  t.teardown(() => client.end());
  const insert = (id: string) => client.query(
    `insert into activity (id, organization_id, event_type, category, data, date, organization_user_id) values ($1, $2, 'project.created', 'RESEARCH', '{}', now(), $3)`,
    [id, org, alice.organizationUserId],
  );
  const rolledBack = crypto.randomUUID();
  await client.query('begin');
  await insert(rolledBack);
  t.equal((await client.query('select 1 from webhook_change_pending where activity_id = $1', [rolledBack])).rowCount, 1, 'captured in the transaction');
  await client.query('rollback');

  const history = [crypto.randomUUID(), crypto.randomUUID()];
  await client.query('begin');
  await client.query(`set local labdata.history = 'on'`);
  for (const id of history) await insert(id);
  await client.query('commit');

  // A committed event after both: once it is delivered, anything before it would have been too.
  const barrier = await createdEvent((await createProject(server, admin, 'PUBLIC')).id);
  await receiver.waitFor(() => forEvent(receiver, barrier).length === 1);
  t.equal(forEvent(receiver, rolledBack).length, 0, 'the rolled-back write');
  t.same(history.map((id) => forEvent(receiver, id).length), [0, 0], 'the history');
  t.same(await server.sql('select activity_id from webhook_delivery where activity_id in (?, ?, ?)', [rolledBack, ...history]), [], 'no delivery made for either');
  t.equal((await server.sql('select 1 from webhook_change where activity_id in (?, ?)', history)).length, 2, 'history is in the change log (the feed shows it)');
});

t.test('5 days of failed deliveries set a subscription inactive, with a webhook.disabled record; active again on PUT', async (t) => {
  const receiver = await Receiver.start(t);
  receiver.answer = () => 503;
  const watcher = await Receiver.start(t);
  await subscribe(t, watcher, { eventTypes: ['webhook.disabled'] }, other);
  const hook = await subscribe(t, receiver, { eventTypes: ['project.created'] });
  const first = await createdEvent((await createProject(server, admin, 'PUBLIC')).id);
  await server.waitFor(async () => (await deliveryOf(hook.id, first))?.attempts >= 1);
  // The streak is recorded right after the attempt's outcome (worker.ts, #flush then #failing).
  const failing = async () => (await server.sql<{ failing: boolean }>('select failing_since is not null as failing from webhook_subscription where id = ?', [hook.id]))[0].failing;
  await server.waitFor(failing, 5_000, 'the failing streak');
  t.ok(await failing(), 'a failed attempt starts the failing streak');
  // Five days pass without a delivered attempt (the streak's start moved back); the next attempt fails too.
  await server.sql(`update webhook_subscription set failing_since = now() - interval '5 days 1 minute' where id = ?`, [hook.id]);
  const last = await server.post(`/api/v1/webhooks/${hook.id}/test`, undefined, { key: admin.key });
  await server.waitFor(async () => (await server.get(`/api/v1/webhooks/${hook.id}`, { key: admin.key })).body.active === false, 10_000, 'the subscription set inactive');
  const got = (await server.get(`/api/v1/webhooks/${hook.id}`, { key: admin.key })).body;
  t.ok(got.disabledAt);
  const [record] = await server.sql<{ category: string; data: any; organization_user_id: string }>(
    `select category, data, organization_user_id from activity where event_type = 'webhook.disabled' and data->>'webhookId' = ?`, [hook.id]);
  t.equal(record.category, 'ADMINISTRATIVE');
  t.equal(record.organization_user_id, admin.organizationUserId, 'in the name of its creator');
  await watcher.waitFor(() => watcher.of('webhook.disabled').some((r) => r.json.data.data.webhookId === hook.id), 10_000, 'the record delivered to the other subscription');
  await server.waitFor(async () => (await deliveryOf(hook.id, first))?.status === 'FAILED' && (await deliveryOf(hook.id, last.body.eventId))?.status === 'FAILED', 5_000);
  t.pass('its deliveries end FAILED');

  const after = await createdEvent((await createProject(server, admin, 'PUBLIC')).id);
  receiver.answer = () => 200;
  const barrier = await server.post(`/api/v1/webhooks/${hook.id}/test`, undefined, { key: admin.key });
  await waitForDelivery(hook.id, barrier.body.eventId, 'DELIVERED');
  t.equal(forEvent(receiver, after).length, 0, 'an inactive subscription gets no events (its test endpoint still works)');
  t.equal(await deliveryOf(hook.id, after), undefined);

  const on = await server.put(`/api/v1/webhooks/${hook.id}`, { active: true }, { key: admin.key });
  t.match(on.body, { active: true, disabledAt: null });
  const later = await createdEvent((await createProject(server, admin, 'PUBLIC')).id);
  await receiver.waitFor(() => forEvent(receiver, later).length === 1);
});

t.test('with LABDATA_WEBHOOK_ALLOW_PRIVATE=true: http and https to private and loopback addresses; plain http elsewhere and metadata addresses still refused', async (t) => {
  for (const url of ['http://127.0.0.1:8080/x', 'http://10.0.0.1/x', 'https://192.168.1.1/x', 'http://localhost/x']) {
    const res = await server.post('/api/v1/webhooks', { url }, { key: admin.key });
    t.equal(res.status, 201, url);
    await server.delete(`/api/v1/webhooks/${res.body.id}`, { key: admin.key });
  }
  for (const url of ['http://8.8.8.8/x', 'http://169.254.169.254/latest', 'https://[fd00:ec2::254]/', 'https://100.100.100.200/']) {
    const res = await server.post('/api/v1/webhooks', { url }, { key: admin.key });
    t.equal(res.status, 400, url);
    t.equal(res.body.errors[0].field, 'url');
  }
});
