// Prometheus metrics (issue 12, point 7): request count and duration by route template and
// status, database pool, job queues and process metrics, served to operators only.
import t from 'tap';
import { randomUUID } from 'node:crypto';
import { startTestServer } from '../support/server.ts';

const server = await startTestServer(t);
const org = await server.organization('Operators');
const admin = await server.admin(org);
const member = await server.member(org);
const other = await server.admin(await server.organization('Tenant'));

/** The value of one sample line `name{labels} value` (labels in prom-client's order). */
function sample(text: string, name: string, labels: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}} `));
  return line === undefined ? undefined : Number(line.split(' ').at(-1));
}

t.test('GET /metrics is for admin keys only', async (t) => {
  t.equal((await server.get('/metrics')).status, 401, 'no key');
  t.equal((await server.get('/metrics', { key: 'key_nope.nope' })).status, 401, 'a bad key');
  t.equal((await server.get('/metrics', { key: member.key })).status, 403, 'a member who is not an admin');
  const res = await server.get('/metrics', { key: admin.key });
  t.equal(res.status, 200);
  t.match(res.headers.get('content-type'), /^text\/plain; version=0\.0\.4/);
  t.match(res.text, /\nlabdata_db_pool_waiting 0\n/, 'the first scrape: its own queries are no waiters');
  // LABDATA_METRICS_ORGANIZATIONS narrows it to the operators' own organization(s).
  const { config } = server.kernel.services;
  config.metricsOrganizations = [org];
  t.teardown(() => void (config.metricsOrganizations = []));
  t.equal((await server.get('/metrics', { key: other.key })).status, 403, 'an admin of another organization');
  t.equal((await server.get('/metrics', { key: admin.key })).status, 200, 'an admin of a listed organization');
});

t.test('requests are counted and timed by route template, method and status', async (t) => {
  const scrape = async () => (await server.get('/metrics', { key: admin.key })).text;
  const before = await scrape();
  const missing = randomUUID();
  for (let i = 0; i < 3; i++) t.equal((await server.get('/api/v1/projects', { key: member.key })).status, 200);
  t.equal((await server.get(`/api/v1/projects/${missing}`, { key: member.key })).status, 404);
  t.equal((await server.get('/api/v1/projects')).status, 401);
  t.equal((await server.get(`/no/such/${missing}`)).status, 404);
  // MCP answers through the SDK's transport (a hijacked reply): counted all the same.
  const mcp = await server.post('/mcp', { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }, { key: member.key, headers: { accept: 'application/json, text/event-stream' } });
  t.equal(mcp.status, 200);
  const text = await scrape();
  const delta = (name: string, labels: string) => (sample(text, name, labels) ?? 0) - (sample(before, name, labels) ?? 0);
  t.equal(delta('labdata_http_requests_total', 'method="GET",route="/api/v1/projects",status="200"'), 3);
  t.equal(delta('labdata_http_requests_total', 'method="GET",route="/api/v1/projects/:id",status="404"'), 1, 'the template, not the id');
  t.equal(delta('labdata_http_requests_total', 'method="GET",route="/api/v1/projects",status="401"'), 1);
  t.equal(delta('labdata_http_requests_total', 'method="GET",route="unmatched",status="404"'), 1, 'an unknown path is one series');
  t.equal(delta('labdata_http_request_duration_seconds_count', 'method="GET",route="/api/v1/projects",status="200"'), 3);
  t.equal(delta('labdata_http_request_duration_seconds_bucket', 'le="+Inf",method="GET",route="/api/v1/projects",status="200"'), 3);
  t.ok((sample(text, 'labdata_http_request_duration_seconds_sum', 'method="GET",route="/api/v1/projects",status="200"') ?? 0) > 0, 'durations add up');
  t.equal(delta('labdata_http_requests_total', 'method="POST",route="/mcp",status="200"'), 1, 'MCP requests too');
  t.notMatch(text, missing, 'no path value becomes a label');
  t.notMatch(text, admin.key, 'no key');
});

t.test('database pool, job queues and process metrics', async (t) => {
  const queues = server.kernel.services.jobs.names();
  t.ok(queues.length > 0, 'the built-in plugins define jobs');
  // Workers do not run in this server: a queued job waits, so the depth and age are known.
  await server.orm.em.fork().transactional((em) => server.kernel.services.jobs.enqueue(em, queues[0], { stepId: randomUUID() }));
  await server.sql(`update pgboss.job set created_on = now() - interval '90 seconds' where name = ?`, [queues[0]]);
  const text = (await server.get('/metrics', { key: admin.key })).text;
  t.equal(sample(text, 'labdata_job_queue_depth', `queue="${queues[0]}"`), 1);
  t.ok(sample(text, 'labdata_job_queue_oldest_age_seconds', `queue="${queues[0]}"`)! >= 90, 'the oldest job is 90 s old');
  for (const queue of queues.slice(1)) t.equal(sample(text, 'labdata_job_queue_depth', `queue="${queue}"`), 0, `${queue}: empty`);
  t.equal(sample(text, 'labdata_job_queue_depth', `queue="${queues[0]}.failed"`), 0, 'dead-letter queues too');
  t.ok(sample(text, 'labdata_db_pool_connections', 'state="in_use"')! >= 0);
  t.ok(sample(text, 'labdata_db_pool_connections', 'state="idle"')! >= 0);
  t.match(text, /\nlabdata_db_pool_waiting \d+\n/);
  // Nothing else runs here: no request waits for a connection, the scrape's own queries included.
  for (let i = 0; i < 5; i++) {
    t.match((await server.get('/metrics', { key: admin.key })).text, /\nlabdata_db_pool_waiting 0\n/, `scrape ${i}: no waiter`);
  }
  t.match(text, /\nlabdata_db_pool_max 10\n/);
  t.match(text, /\nprocess_cpu_user_seconds_total [\d.e+-]+\n/, 'default process metrics');
  t.match(text, /\nnodejs_heap_size_used_bytes [\d.e+-]+\n/);
});
