import t from 'tap';
import { generateKeyPairSync } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { createTestDatabase } from '../support/db.ts';
import { dataDir, spawnServe, type Tap } from '../support/serve-process.ts';

// Every start-up failure an operator can cause ends in one line naming the cause and the
// setting to change (names from the operator contract), exit 1, never a stack trace.

const testCert = process.env.LABDATA_TEST_TLS_CERT!;
const testKey = process.env.LABDATA_TEST_TLS_KEY!;

type Assert = (...args: any[]) => unknown;

async function failedStart(t: Tap & { equal: Assert; match: Assert; notMatch: Assert; ok: Assert }, env: Record<string, string>, setting: RegExp) {
  const run = spawnServe(t, env);
  const { code } = await run.exited;
  const stderr = run.stderr();
  t.equal(code, 1, 'exit 1');
  const lines = stderr.split('\n').filter(Boolean);
  const reasons = lines.filter((l) => !l.startsWith('{'));
  t.equal(reasons.length, 1, `one line besides JSON logs:\n${stderr}`);
  t.match(reasons[0] ?? '', /^labdata: /);
  t.match(reasons[0] ?? '', setting, 'names the setting to change');
  t.notMatch(stderr, /^\s+at /m, 'no stack trace');
  t.equal(run.stdout(), '', 'no ready line');
  return reasons[0] ?? '';
}

t.test('port already taken: names LABDATA_PORT', async (t) => {
  const blocker = net.createServer();
  await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
  t.teardown(() => blocker.close());
  const port = (blocker.address() as net.AddressInfo).port;
  const line = await failedStart(t, {
    LABDATA_DATABASE_URL: await createTestDatabase(t),
    LABDATA_DATA_DIR: dataDir(t),
    LABDATA_TLS_CERT: testCert,
    LABDATA_TLS_KEY: testKey,
    LABDATA_PLUGINS: 'users',
    LABDATA_PORT: String(port),
  }, /LABDATA_PORT/);
  t.match(line, `port ${port}`);
  t.match(line, /already in use/);
});

t.test('bad certificate or key files: names LABDATA_TLS_CERT / LABDATA_TLS_KEY', async (t) => {
  const dir = dataDir(t);
  const garbage = join(dir, 'garbage.pem');
  writeFileSync(garbage, 'not a certificate\n');
  const base = { LABDATA_DATABASE_URL: 'postgresql://nobody@127.0.0.1:1/none', LABDATA_DATA_DIR: dir, LABDATA_PLUGINS: 'users' };
  t.match(await failedStart(t, { ...base, LABDATA_TLS_CERT: garbage, LABDATA_TLS_KEY: testKey }, /LABDATA_TLS_CERT/), /not a PEM certificate/);
  t.match(await failedStart(t, { ...base, LABDATA_TLS_CERT: testCert, LABDATA_TLS_KEY: join(dir, 'missing.pem') }, /LABDATA_TLS_KEY/), /ENOENT/);
  // A key of another algorithm than the (EC) certificate's: OpenSSL loads the pair, handshakes would fail.
  const rsaKey = join(dir, 'rsa-key.pem');
  writeFileSync(rsaKey, generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }));
  t.match(await failedStart(t, { ...base, LABDATA_TLS_CERT: testCert, LABDATA_TLS_KEY: rsaKey }, /LABDATA_TLS_KEY/), /does not belong to the certificate/);
});

t.test('database unreachable: names LABDATA_DATABASE_URL, never its password', async (t) => {
  const closed = net.createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const port = (closed.address() as net.AddressInfo).port;
  await new Promise((resolve) => closed.close(resolve));
  const line = await failedStart(t, {
    LABDATA_DATABASE_URL: `postgresql://someone:pw-not-to-print@127.0.0.1:${port}/labdata`,
    LABDATA_DATA_DIR: dataDir(t),
    LABDATA_TLS_CERT: testCert,
    LABDATA_TLS_KEY: testKey,
    LABDATA_PLUGINS: 'users',
  }, /LABDATA_DATABASE_URL/);
  t.match(line, `127.0.0.1:${port}/labdata`);
  t.match(line, /ECONNREFUSED/);
  t.notMatch(line, /pw-not-to-print/);
});

t.test('unwritable data directory: names LABDATA_DATA_DIR', async (t) => {
  const dir = dataDir(t);
  const file = join(dir, 'a-file');
  writeFileSync(file, '');
  // Root may write anywhere it has a directory; a path through a regular file is unwritable for all.
  const line = await failedStart(t, { LABDATA_DATA_DIR: join(file, 'data'), LABDATA_PLUGINS: 'users' }, /LABDATA_DATA_DIR/);
  t.match(line, join(file, 'data'));
  // A directory that can neither be created nor found (procfs): the same one line, not a hang.
  t.match(await failedStart(t, { LABDATA_DATA_DIR: '/proc/labdata-nowhere/data', LABDATA_PLUGINS: 'users' }, /LABDATA_DATA_DIR/), /cannot create the data directory/);
});

t.test('malformed settings stop start-up before anything runs: one line naming the variable, exit 2', async (t) => {
  const base = { LABDATA_DATABASE_URL: 'postgresql://nobody@127.0.0.1:1/none', LABDATA_DATA_DIR: dataDir(t), LABDATA_PLUGINS: 'users' };
  const cases: [string, Record<string, string>][] = [
    ['LABDATA_SECRET_KEY', { LABDATA_SECRET_KEY: 'too-short' }],
    ['LABDATA_LOG_LEVEL', { LABDATA_LOG_LEVEL: 'loud' }],
    ['LABDATA_METRICS_ORGANIZATIONS', { LABDATA_METRICS_ORGANIZATIONS: 'acme' }],
    ['LABDATA_MCP_ALLOWED_HOSTS', { LABDATA_MCP_ALLOWED_HOSTS: 'mcp.example.com, not a host' }],
  ];
  for (const [setting, env] of cases) {
    const run = spawnServe(t, { ...base, ...env });
    const { code } = await run.exited;
    const lines = run.stderr().split('\n').filter(Boolean);
    t.equal(code, 2, `${setting}: exit 2`);
    t.equal(lines.length, 1, `${setting}: one line`);
    t.match(lines[0], new RegExp(`^labdata: ${setting} must be`), `${setting}: names the variable`);
  }
});

t.test('settings that name the same thing another way are accepted as such', async (t) => {
  const { loadConfig } = await import('../../app/config.ts');
  const id = '9D2F1C3E-0A4B-4C5D-8E6F-7A8B9C0D1E2F';
  t.same(loadConfig({ LABDATA_METRICS_ORGANIZATIONS: id }).metricsOrganizations, [id.toLowerCase()], 'an upper-case organization id');
  t.same(loadConfig({ LABDATA_MCP_ALLOWED_HOSTS: '::1, [fd00::10], mcp.example.com:8443' }).mcpAllowedHosts, ['::1', '[fd00::10]', 'mcp.example.com:8443'], 'IPv6 addresses and a port');
  t.throws(() => loadConfig({ LABDATA_MCP_ALLOWED_HOSTS: '*.example.com' }), /LABDATA_MCP_ALLOWED_HOSTS must be comma-separated host names \(no wildcards\), got "\*\.example\.com"/);
});

t.test('numeric settings are decimal digits; an empty one means its default', async (t) => {
  const { loadConfig } = await import('../../app/config.ts');
  for (const port of ['0x25FC', '1e3', '8443.0', '-1', '65536', 'http']) {
    t.throws(() => loadConfig({ LABDATA_PORT: port }), /LABDATA_PORT must be a port number/, `LABDATA_PORT=${port}`);
  }
  t.equal(loadConfig({ LABDATA_PORT: '' }).port, 8443, 'LABDATA_PORT= is the default, not a random port');
  t.equal(loadConfig({ LABDATA_PORT: ' 9724 ' }).port, 9724, 'surrounding spaces (an .env file) are not part of the number');
  t.equal(loadConfig({ LABDATA_PORT: '0' }).port, 0, '0 still picks a free port');
  t.throws(() => loadConfig({ LABDATA_RATE_LIMIT_PER_MINUTE: '0x10' }), /LABDATA_RATE_LIMIT_PER_MINUTE/);
  t.throws(() => loadConfig({ LABDATA_JOB_CONCURRENCY: '4.0' }), /LABDATA_JOB_CONCURRENCY/);
});
