// Issue 12, point 5: per-key rate limit with 429, Retry-After and the IETF RateLimit headers.
import t from 'tap';
import type { FastifyReply } from 'fastify';
import { RateLimiter, TooManyRequestsError } from '../../app/http/rate-limit.ts';
import { loadConfig } from '../../app/config.ts';
import { startTestServer } from '../support/server.ts';

const server = await startTestServer(t, { env: { LABDATA_RATE_LIMIT_PER_MINUTE: '5' } });
const org = await server.organization();
const alice = await server.member(org);
const bob = await server.member(org);

t.test('the quota counts per key; past it, 429 with the envelope and Retry-After', async (t) => {
  for (let i = 1; i <= 5; i++) {
    const res = await server.get('/api/v1/projects', { key: alice.key });
    t.equal(res.status, 200, `request ${i} is served`);
    t.equal(res.headers.get('ratelimit-policy'), '"per-key";q=5;w=60');
    t.match(res.headers.get('ratelimit'), new RegExp(`^"per-key";r=${5 - i};t=([1-9]|[1-5][0-9]|60)$`));
  }
  const limited = await server.get('/api/v1/projects', { key: alice.key });
  t.equal(limited.status, 429);
  t.same(Object.keys(limited.body).sort(), ['error', 'message', 'path', 'statusCode', 'timestamp']);
  t.equal(limited.body.statusCode, 429);
  t.equal(limited.body.error, 'Too Many Requests');
  const retryAfter = Number(limited.headers.get('retry-after'));
  t.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, 'Retry-After in seconds');
  t.match(limited.headers.get('ratelimit'), /^"per-key";r=0;t=\d+$/);
  t.ok(limited.headers.get('x-request-id'));

  // Writes, other mounts and /mcp share the key's quota.
  const write = await server.post('/api/beta/keywords', { value: 'limited' }, { key: alice.key });
  t.equal(write.status, 429);
  t.equal((await server.sql('select count(*)::int as n from keyword')).at(0)?.n, 0, 'the refused write did nothing');
  const mcp = await server.request('POST', '/mcp', {
    key: alice.key,
    headers: { accept: 'application/json, text/event-stream' },
    body: { jsonrpc: '2.0', id: 1, method: 'tools/list' },
  });
  t.equal(mcp.status, 429);
  t.equal(mcp.body.jsonrpc, '2.0', 'a JSON-RPC error on /mcp');
  t.ok(mcp.headers.get('retry-after'));

  // Another key of the same user's organization is not affected.
  const other = await server.get('/api/v1/projects', { key: bob.key });
  t.equal(other.status, 200);
  t.match(other.headers.get('ratelimit'), /^"per-key";r=4;/);
});

t.test('the window resets: a key past its quota is served again a minute after its window began', async (t) => {
  // README "Rate limits": N requests "per minute"; `RateLimit: …;t=42` is the seconds until the
  // window resets. The limiter takes the clock as an argument, so no waiting for a real minute.
  const limiter = new RateLimiter(2, 60_000);
  const headers = new Map<string, string>();
  const reply = { header: (name: string, value: string) => headers.set(name, value) } as unknown as FastifyReply;
  const take = (now: number) => {
    try {
      limiter.take('k', reply, now);
      return 'served';
    } catch (err) {
      t.type(err, TooManyRequestsError);
      return 'limited';
    }
  };
  const start = 1_000_000;
  t.same([take(start), take(start + 1_000), take(start + 59_000)], ['served', 'served', 'limited']);
  t.equal(headers.get('retry-after'), '1', 'one second left in the window');
  t.equal(take(start + 59_999), 'limited', 'still within the first window');
  t.equal(take(start + 60_000), 'served', 'a new window begins a minute after the first one began');
  t.equal(headers.get('ratelimit'), '"per-key";r=1;t=60', 'with the full quota, less this request');
  t.equal(take(start + 60_001), 'served');
  t.equal(take(start + 60_002), 'limited', 'the new window has the same quota');
});

t.test('requests without a valid key are 401 and carry no quota', async (t) => {
  const res = await server.get('/api/v1/projects', { key: 'key_nope.nope' });
  t.equal(res.status, 401);
  t.equal(res.headers.get('ratelimit'), null);
});

t.test('LABDATA_RATE_LIMIT_PER_MINUTE: default 1200, 0 turns it off, nonsense is refused', async (t) => {
  t.equal(loadConfig({}).rateLimitPerMinute, 1200);
  t.equal(loadConfig({ LABDATA_RATE_LIMIT_PER_MINUTE: '0' }).rateLimitPerMinute, 0);
  t.throws(() => loadConfig({ LABDATA_RATE_LIMIT_PER_MINUTE: 'many' }), /LABDATA_RATE_LIMIT_PER_MINUTE/);
  t.throws(() => loadConfig({ LABDATA_RATE_LIMIT_PER_MINUTE: '-1' }), /LABDATA_RATE_LIMIT_PER_MINUTE/);
});
