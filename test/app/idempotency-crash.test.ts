// A process killed between a create's commit and storing its response (README, "Idempotent
// retries"): the retry, on another instance, must not create the record a second time.
import t from 'tap';
import { startTestServer, TEST_SECRET_KEY } from '../support/server.ts';
import { dataDir, serve, stop } from '../support/serve-process.ts';

const server = await startTestServer(t, { plugins: ['users', 'projects'] });
const alice = await server.member(await server.organization());

t.test('a create retried after its process died past the commit is a 409, never a second record', async (t) => {
  const killed = await serve(t, {
    LABDATA_DATABASE_URL: server.databaseUrl,
    LABDATA_DATA_DIR: dataDir(t),
    LABDATA_PLUGINS: 'users,projects',
    LABDATA_SECRET_KEY: TEST_SECRET_KEY,
    LABDATA_TLS_CERT: process.env.LABDATA_TEST_TLS_CERT,
    LABDATA_TLS_KEY: process.env.LABDATA_TEST_TLS_KEY,
  });
  // Storing the response hangs: the kill lands after the create committed and before its response is kept.
  await server.sql(`create function hold_response() returns trigger language plpgsql as $$
    begin if new.status_code is not null then perform pg_sleep(60); end if; return new; end $$`);
  await server.sql(`create trigger hold_response before update on idempotency_key for each row execute function hold_response()`);
  t.teardown(() => server.sql('drop trigger if exists hold_response on idempotency_key'));

  const body = { code: 'CRASH-1', name: 'Crash', description: 'd' };
  const headers = { 'x-api-key': alice.key, 'content-type': 'application/json', 'idempotency-key': 'crash-1' };
  const first = fetch(`https://localhost:${killed.port}/api/v1/projects`, { method: 'POST', headers, body: JSON.stringify(body) }).catch(() => 'connection lost');
  await server.waitFor(async () => (await server.sql(`select 1 from pg_stat_activity where query like 'update idempotency_key set status_code%' and wait_event = 'PgSleep' and datname = current_database()`)).length === 1, 20_000, 'the response store hangs');
  t.same(await server.sql(`select count(*)::int as n from project where code = 'CRASH-1'`), [{ n: 1 }], 'the create committed');
  await stop(killed, 'SIGKILL');
  t.equal(await first, 'connection lost', 'the client never got its answer');
  // Its database session goes with it (PostgreSQL would finish the statement on its own).
  await server.sql(`select pg_terminate_backend(pid) from pg_stat_activity where query like 'update idempotency_key set status_code%' and pid <> pg_backend_pid() and datname = current_database()`);
  await server.sql('drop trigger hold_response on idempotency_key');
  // The retry comes once the claim is stale (its process is gone): time passes.
  await server.waitFor(async () => (await server.sql(`update idempotency_key set created_at = now() - interval '5 minutes', applied_at = now() - interval '5 minutes' where key = 'crash-1' returning 1`)).length === 1, 10_000, 'the claim row free');

  const retry = await server.post('/api/v1/projects', body, { key: alice.key, headers: { 'idempotency-key': 'crash-1' } });
  t.equal(retry.status, 409);
  t.match(retry.body.message, /was carried out, but its response was lost/);
  t.same(await server.sql(`select count(*)::int as n from project where code = 'CRASH-1'`), [{ n: 1 }], 'still one project');
});
