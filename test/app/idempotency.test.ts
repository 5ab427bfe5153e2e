// Idempotent retries (issue 11, point 4): every REST create (POST answering 201) accepts an
// `Idempotency-Key`; the same key and body within 24 h answer the first response without a second
// record, another body is a 409, concurrent duplicates wait for the first; keys are per user.
import t, { type Test } from 'tap';
import pg from 'pg';
import { startTestServer, type Member, type Response } from '../support/server.ts';

const server = await startTestServer(t, { plugins: ['users', 'projects', 'studies', 'collaborators', 'tasks'] });
const org = await server.organization();
const alice = await server.member(org);
const bob = await server.member(org);

let seq = 0;
const projectBody = (code = `IK-${++seq}`) => ({ code, name: 'Retried', description: 'd', visibility: 'PROTECTED' });
const createProject = (m: Member, body: unknown, key?: string) =>
  server.post('/api/v1/projects', body, { key: m.key, headers: key === undefined ? {} : { 'idempotency-key': key } });
const count = async (table: string, column: string, value: string) =>
  (await server.sql<{ n: number }>(`select count(*)::int as n from ${table} where ${column} = ?`, [value]))[0].n;

function assertEnvelope(t: Test, res: Response, status: number) {
  t.equal(res.status, status);
  t.same(Object.keys(res.body ?? {}).filter((k) => !['details', 'errors'].includes(k)).sort(), ['error', 'message', 'path', 'statusCode', 'timestamp']);
  t.equal(res.body.statusCode, status);
}

t.test('same key and body: the first response again (status, body, Location), one record', async (t) => {
  const body = projectBody();
  const first = await createProject(alice, body, 'retry-1');
  t.equal(first.status, 201);
  const again = await createProject(alice, body, 'retry-1');
  t.equal(again.status, 201);
  t.same(again.body, first.body, 'the same body, the same id');
  t.equal(again.headers.get('location'), first.headers.get('location'));
  t.equal(again.headers.get('idempotent-replayed'), 'true');
  t.equal(first.headers.get('idempotent-replayed'), null);
  t.equal(await count('project', 'code', body.code), 1, 'no second record');
  // The same JSON with its keys in another order is the same request.
  const reordered = Object.fromEntries(Object.entries(body).reverse());
  t.same((await createProject(alice, reordered, 'retry-1')).body, first.body);
});

t.test('a retry on the other mount gets the first response with Location on the mount it used', async (t) => {
  const body = projectBody();
  const headers = { 'idempotency-key': 'mounts-1' };
  const first = await server.post('/api/beta/projects', body, { key: alice.key, headers });
  t.equal(first.status, 201);
  t.equal(first.headers.get('location'), `/api/beta/projects/${first.body.id}`);
  const again = await server.post('/api/v1/projects', body, { key: alice.key, headers });
  t.equal(again.headers.get('idempotent-replayed'), 'true');
  t.same(again.body, first.body, 'the same record');
  t.equal(again.headers.get('location'), `/api/v1/projects/${first.body.id}`, 'on /api/v1');
  t.equal((await server.post('/api/beta/projects', body, { key: alice.key, headers })).headers.get('location'), `/api/beta/projects/${first.body.id}`, 'and back on /api/beta');
  t.equal(await count('project', 'code', body.code), 1);
});

t.test('same key, another body: 409 with the envelope, nothing created', async (t) => {
  const body = projectBody();
  t.equal((await createProject(alice, body, 'retry-2')).status, 201);
  const other = projectBody();
  const res = await createProject(alice, other, 'retry-2');
  assertEnvelope(t, res, 409);
  t.match(res.body.message, /Idempotency-Key/);
  t.equal(await count('project', 'code', other.code), 0);
});

t.test('same key and body on another path: 409, nothing created under the second parent', async (t) => {
  // README "Idempotent retries": the same request is "same operation, path, query and JSON body";
  // "The same key with another request is a 409".
  const a = (await createProject(alice, projectBody())).body;
  const b = (await createProject(alice, projectBody())).body;
  const task = { label: 'Weigh' };
  const headers = { 'idempotency-key': 'path-1' };
  const first = await server.post(`/api/v1/projects/${a.id}/tasks`, task, { key: alice.key, headers });
  t.equal(first.status, 201);
  const other = await server.post(`/api/v1/projects/${b.id}/tasks`, task, { key: alice.key, headers });
  assertEnvelope(t, other, 409);
  t.equal(other.headers.get('idempotent-replayed'), null, 'not the first response replayed');
  t.equal(await count('task', 'parent_id', b.id), 0, 'no task under the second project');
  t.equal(await count('task', 'parent_id', a.id), 1);
});

t.test('concurrent duplicates wait for the first and get its response: one record', async (t) => {
  const body = projectBody();
  const results = await Promise.all(Array.from({ length: 20 }, () => createProject(alice, body, 'burst-1')));
  t.same(results.map((r) => r.status), Array(20).fill(201));
  t.equal(new Set(results.map((r) => r.body.id)).size, 1, 'every answer names the same project');
  t.equal(await count('project', 'code', body.code), 1, 'exactly one record');
  t.equal(results.filter((r) => r.headers.get('idempotent-replayed') === null).length, 1, 'one request ran, the others replayed');
});

t.test('concurrent requests with one key and different bodies: one runs, the others are refused', async (t) => {
  const bodies = Array.from({ length: 10 }, () => projectBody());
  const results = await Promise.all(bodies.map((b) => createProject(alice, b, 'burst-2')));
  t.equal(results.filter((r) => r.status === 201).length, 1);
  t.equal(results.filter((r) => r.status === 409).length, 9);
  let created = 0;
  for (const b of bodies) created += await count('project', 'code', b.code);
  t.equal(created, 1);
});

t.test('duplicates of a create held up in its transaction poll without holding connections: other requests still run', async (t) => {
  const project = await createProject(alice, projectBody(), undefined);
  // The study create waits for the project its transaction locks; its claim row stays marked, uncommitted.
  const holder = new pg.Client({ connectionString: server.databaseUrl });
  await holder.connect();
  t.teardown(() => holder.end());
  await holder.query('begin');
  await holder.query('select 1 from project where id = $1 for update', [project.body.id]);
  const send = () => server.post('/api/v1/studies', { projectId: project.body.id, name: 'Held' }, { key: alice.key, headers: { 'idempotency-key': 'held-1' } });
  const first = send();
  await server.waitFor(async () => (await server.sql(`select 1 from pg_stat_activity where wait_event_type = 'Lock' and query like '%project%' and datname = current_database()`)).length > 0, 10_000, 'the create to wait');
  // More duplicates than the pool has connections (10).
  const duplicates = Array.from({ length: 12 }, send);
  await new Promise((r) => setTimeout(r, 300));
  const unrelated = await server.get('/api/v1/projects?size=1', { key: bob.key });
  t.equal(unrelated.status, 200, 'an unrelated request gets a connection');
  await holder.query('commit');
  const answers = await Promise.all([first, ...duplicates]);
  t.same(answers.map((a) => a.status), answers.map(() => 201));
  t.equal(answers.filter((a) => a.headers.get('idempotent-replayed') === 'true').length, 12, 'the duplicates replay the first');
  t.equal(await count('study', 'project_id', project.body.id), 1, 'one study');
});

t.test('keys are scoped to the key\'s user', async (t) => {
  const body = projectBody();
  const a = await createProject(alice, body, 'shared-key');
  const b = await createProject(bob, body, 'shared-key');
  t.equal(a.status, 201);
  t.equal(b.status, 201);
  t.not(a.body.id, b.body.id, 'another user\'s key of the same name is another key');
  t.equal(await count('project', 'code', body.code), 2);
});

t.test('without the header every create runs', async (t) => {
  const body = projectBody();
  t.equal((await createProject(alice, body)).status, 201);
  t.equal((await createProject(alice, body)).status, 201);
  t.equal(await count('project', 'code', body.code), 2);
});

t.test('a failed first attempt is not stored: the retry runs', async (t) => {
  const bad = await createProject(alice, { code: 'IK-bad', name: '', description: 'd' }, 'fix-me');
  t.equal(bad.status, 400);
  t.same(await server.sql('select key from idempotency_key where key = ?', ['fix-me']), [], 'the key was released');
  const body = projectBody();
  const ok = await createProject(alice, body, 'fix-me');
  t.equal(ok.status, 201);
  t.equal(await count('project', 'code', body.code), 1);
  // A parent that does not exist (404): released as well.
  const missing = await server.post('/api/v1/studies', { projectId: '00000000-0000-4000-8000-000000000000', name: 'S' }, { key: alice.key, headers: { 'idempotency-key': 'study-1' } });
  t.equal(missing.status, 404);
  const study = await server.post('/api/v1/studies', { projectId: ok.body.id, name: 'S' }, { key: alice.key, headers: { 'idempotency-key': 'study-1' } });
  t.equal(study.status, 201);
});

t.test('a response the database could not store at once is stored by a retry: a duplicate replays it', async (t) => {
  // The first store of a response fails (as when the database drops as the create commits).
  // A sequence, not a table: its step survives the failed statement's rollback.
  await server.sql(`create sequence settle_fault`);
  await server.sql(`create function settle_fail_once() returns trigger language plpgsql as $$
    begin
      -- The store of the response (not the mark the create's own transaction sets).
      if new.status_code is not null and nextval('settle_fault') = 1 then raise exception 'connection lost' using errcode = '57P01'; end if;
      return new;
    end $$`);
  await server.sql(`create trigger settle_fail_once before update on idempotency_key for each row execute function settle_fail_once()`);
  t.teardown(() => server.sql('drop trigger settle_fail_once on idempotency_key'));
  const body = projectBody();
  const first = await createProject(alice, body, 'settle-later');
  t.equal(first.status, 201, 'the create stands');
  await server.waitFor(async () => (await server.sql(`select 1 from idempotency_key where key = 'settle-later' and status_code = 201`)).length === 1, 10_000, 'the response stored');
  const again = await createProject(alice, body, 'settle-later');
  t.equal(again.status, 201);
  t.equal(again.headers.get('idempotent-replayed'), 'true');
  t.same(again.body, first.body);
  t.equal(await count('project', 'code', body.code), 1, 'no second record');
});

t.test('a key is remembered for 24 hours', async (t) => {
  const body = projectBody();
  const first = await createProject(alice, body, 'day-old');
  await server.sql(`update idempotency_key set created_at = now() - interval '24 hours 1 minute' where key = 'day-old'`);
  const later = await createProject(alice, body, 'day-old');
  t.equal(later.status, 201);
  t.not(later.body.id, first.body.id, 'an expired key runs the create again');
  t.equal(later.headers.get('idempotent-replayed'), null);
});

t.test('a key left in progress by a process that died before its write committed is taken over', async (t) => {
  // app/http/idempotency.ts: "A row left in progress by a process that died is taken over after
  // STALE_SECONDS" (20); without that, every retry with the key would wait and 409 for 24 hours.
  const body = projectBody();
  // The same request by bob gives the request hash (it does not include the user): alice's claim
  // is then a copy of it, left as a process that died mid-request leaves it: no response, 3 minutes old.
  t.equal((await createProject(bob, body, 'probe')).status, 201);
  await server.sql(
    `insert into idempotency_key (organization_id, user_id, key, request_hash, created_at)
     select organization_id, ?, 'orphaned', request_hash, now() - interval '3 minutes' from idempotency_key where user_id = ? and key = 'probe'`,
    [alice.userId, bob.userId],
  );
  const retry = await createProject(alice, body, 'orphaned');
  t.equal(retry.status, 201, 'the retry runs');
  t.equal(retry.headers.get('idempotent-replayed'), null);
  const mine = await server.sql<{ n: number }>('select count(*)::int as n from project where code = ? and created_by_id = ?', [body.code, alice.organizationUserId]);
  t.equal(mine[0].n, 1, 'alice\'s project was created once');
  const again = await createProject(alice, body, 'orphaned');
  t.equal(again.headers.get('idempotent-replayed'), 'true', 'the key now answers the taken-over response');
  t.same(again.body, retry.body);
});

t.test('a create that committed but whose response was lost is never run again: the retry is a 409 saying so', async (t) => {
  const body = projectBody();
  const first = await createProject(alice, body, 'died-after-commit');
  t.equal(first.status, 201);
  const [row] = await server.sql<{ applied: boolean }>(`select applied from idempotency_key where key = 'died-after-commit'`);
  t.equal(row.applied, true, 'the create\'s own transaction marked the key applied');
  // What a process killed between the commit and storing the response leaves behind.
  await server.sql(
    `update idempotency_key set status_code = null, content_type = null, location = null, response_body = null,
            created_at = now() - interval '5 minutes', applied_at = now() - interval '5 minutes' where key = 'died-after-commit'`,
  );
  const retry = await createProject(alice, body, 'died-after-commit');
  assertEnvelope(t, retry, 409);
  t.match(retry.body.message, /was carried out, but its response was lost/);
  t.equal(await count('project', 'code', body.code), 1, 'no second record');

  // A create that failed after its write committed keeps its key the same way.
  await server.sql(`update idempotency_key set status_code = 0 where key = 'died-after-commit'`);
  const again = await createProject(alice, body, 'died-after-commit');
  assertEnvelope(t, again, 409);
  t.equal(await count('project', 'code', body.code), 1);
});

t.test('a response stored late (the database was away) is still replayed, not reported lost', async (t) => {
  const body = projectBody();
  const first = await createProject(alice, body, 'late-store');
  t.equal(first.status, 201);
  // As while the store is being retried: applied just now, claimed long ago, no response yet.
  const [kept] = await server.sql<{ status_code: number; content_type: string; location: string; response_body: string }>(
    `select status_code, content_type, location, response_body from idempotency_key where key = 'late-store'`);
  await server.sql(
    `update idempotency_key set status_code = null, content_type = null, location = null, response_body = null,
            created_at = now() - interval '5 minutes', applied_at = now() where key = 'late-store'`,
  );
  const stored = new Promise((r) => setTimeout(r, 3000)).then(() =>
    server.sql('update idempotency_key set status_code = ?, content_type = ?, location = ?, response_body = ? where key = ?',
      [kept.status_code, kept.content_type, kept.location, kept.response_body, 'late-store']));
  const retry = await createProject(alice, body, 'late-store');
  await stored;
  t.equal(retry.status, 201);
  t.equal(retry.headers.get('idempotent-replayed'), 'true', 'the retry waited for the stored response');
  t.same(retry.body, first.body);
  t.equal(await count('project', 'code', body.code), 1);
});

t.test('malformed keys are a 400 with the envelope, after authentication', async (t) => {
  for (const key of ['', 'x'.repeat(256), 'has space', 'tab\there', 'ünïcode']) {
    const body = projectBody();
    const res = await server.request('POST', '/api/v1/projects', {
      key: alice.key,
      body,
      headers: { 'idempotency-key': Buffer.from(key, 'utf8').toString('latin1') },
    });
    assertEnvelope(t, res, 400);
    t.same(res.body.errors?.map((e: { field: string }) => e.field), ['Idempotency-Key'], JSON.stringify(key));
    t.equal(await count('project', 'code', body.code), 0);
  }
  t.equal((await createProject(alice, projectBody(), 'k'.repeat(255))).status, 201, '255 characters are fine');
  const anonymous = await server.post('/api/v1/projects', projectBody(), { headers: { 'idempotency-key': 'has space' } });
  t.equal(anonymous.status, 401, 'authentication comes first');
});

t.test('every plugin\'s creates go through the kernel: collaborators too', async (t) => {
  const body = { label: `Lab ${++seq}` };
  const headers = { 'idempotency-key': 'collab-1' };
  const results = await Promise.all(Array.from({ length: 5 }, () => server.post('/api/v1/collaborators', body, { key: alice.key, headers })));
  t.same(results.map((r) => r.status), Array(5).fill(201));
  t.equal(new Set(results.map((r) => r.body.id)).size, 1);
  t.equal(await count('collaborator', 'label', body.label), 1);
  // The same key on another operation is another request: 409.
  assertEnvelope(t, await createProject(alice, projectBody(), 'collab-1'), 409);
});
