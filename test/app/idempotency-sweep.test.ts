// Keys are remembered for 24 hours (README, "Idempotent retries"): expired ones are swept off the
// request path, batch after batch, so the table does not grow with the keyed creates of busy days.
import t from 'tap';
import { startTestServer } from '../support/server.ts';

const server = await startTestServer(t, { plugins: ['users', 'projects'] });
const alice = await server.member(await server.organization());

t.test('a claim sweeps every expired key, more than one batch of them, without waiting for it', async (t) => {
  await server.sql(
    `insert into idempotency_key (organization_id, user_id, key, request_hash, status_code, created_at)
     select ?, ?, 'old-' || n, 'h', 201, now() - interval '25 hours' from generate_series(1, 2500) n`,
    [alice.organizationId, alice.userId],
  );
  const res = await server.post('/api/v1/projects', { code: 'SW', name: 'Sweep', description: 'd' }, { key: alice.key, headers: { 'idempotency-key': 'fresh' } });
  t.equal(res.status, 201);
  await server.waitFor(async () => (await server.sql(`select 1 from idempotency_key where key like 'old-%' limit 1`)).length === 0, 10_000, 'the expired keys swept');
  t.same(await server.sql(`select key from idempotency_key`), [{ key: 'fresh' }], 'the fresh key stays');
});
