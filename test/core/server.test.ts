import t from 'tap';
import { X509Certificate } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import tls from 'node:tls';
import { createTestDatabase } from '../support/db.ts';
import { projectRoot, runCliInProcess, tempFile } from '../cli/labdata-cli.ts';

import { serve, stop, get, dataDir, isRunning } from '../support/serve-process.ts';

/** The SHA-256 fingerprint of the certificate the server presents. */
function presentedFingerprint(port: number, ca: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port, ca, servername: 'localhost' }, () => {
      resolve(socket.getPeerX509Certificate()!.fingerprint256);
      socket.end();
    });
    socket.on('error', reject);
  });
}

t.test('serve on a database URL with given PEM files: ready line with the real port, graceful SIGTERM', async (t) => {
  const databaseUrl = await createTestDatabase(t);
  const dir = dataDir(t);
  // Provision with the CLI first (it migrates the empty database), then serve the same database.
  const boot = await runCliInProcess(['bootstrap', await tempFile({
    organizations: [{ ref: 'o', name: 'O' }],
    users: [{ ref: 'u', email: 'u@o.test', memberships: [{ organization: 'o', roles: ['ORGANIZATION_ADMIN'] }] }],
    apiKeys: [{ ref: 'k', user: 'u', organization: 'o', name: 'k', days: 7 }],
  })], { LABDATA_DATABASE_URL: databaseUrl });
  t.equal(boot.code, 0, boot.stderr);
  const key = boot.json.apiKeys.k.key;

  const certFile = process.env.LABDATA_TEST_TLS_CERT!;
  const served = await serve(t, {
    LABDATA_DATABASE_URL: databaseUrl,
    LABDATA_DATA_DIR: dir,
    LABDATA_TLS_CERT: certFile,
    LABDATA_TLS_KEY: process.env.LABDATA_TEST_TLS_KEY!,
    LABDATA_PLUGINS: `users,projects,${join(projectRoot, 'test/fixtures/plugins/slow-read/index.ts')}`,
    LABDATA_LOG_LEVEL: 'info',
  });
  t.match(served.url, /^https:\/\/127\.0\.0\.1:\d+$/);
  t.ok(served.port > 0, 'port 0 asks for a free port; the line shows the real one');
  t.equal(served.stdout(), `listening on ${served.url}\n`, 'stdout is the ready line only: no demo on a database URL');

  // `labdata serve` gets the server's memory settings from the launcher itself (not only from
  // npm start's command line), in the same process: a signal to the pid it was started as reaches it.
  const args = (await readFile(`/proc/${served.proc.pid}/cmdline`, 'utf8')).split('\0');
  t.ok(args.includes('--max-old-space-size=256') && args.includes('--max-semi-space-size=32'), `serves with the heap settings: ${args.join(' ')}`);
  const own = await serve(t, { LABDATA_DATABASE_URL: databaseUrl, LABDATA_DATA_DIR: dataDir(t), LABDATA_PLUGINS: 'users', NODE_OPTIONS: '--max-old-space-size=384' });
  const ownArgs = (await readFile(`/proc/${own.proc.pid}/cmdline`, 'utf8')).split('\0');
  t.notOk(ownArgs.some((a) => a.startsWith('--max-')), 'heap settings the operator gave (NODE_OPTIONS) are left alone');
  t.same(await stop(own), { code: 0, signal: null });

  const cert = await readFile(certFile, 'utf8');
  t.equal(await presentedFingerprint(served.port, cert), new X509Certificate(cert).fingerprint256, 'serves the given certificate');
  await t.rejects(stat(join(dir, 'tls')), { code: 'ENOENT' }, 'generates nothing when PEM files are given');
  const projects = await get(`${served.url}/api/v1/projects`, { ca: cert, key });
  t.equal(projects.status, 200);

  // A request in flight when SIGTERM arrives still gets its answer; then the process exits 0.
  const inFlight = get(`${served.url}/api/v1/slow`, { ca: cert, key });
  while (!served.stderr().includes('slow-read: started')) await new Promise((r) => setTimeout(r, 20));
  const exited = stop(served);
  t.same(await inFlight, { status: 200, body: { done: true } });
  t.same(await exited, { code: 0, signal: null }, 'exits 0');
  // Read after exit: stdout and stderr are separate pipes, so their chunks arrive in any order.
  t.match(served.stderr(), /"msg":"shutting down"/, 'logs are JSON lines on stderr');
  await t.rejects(get(`${served.url}/healthz`, { ca: cert }), { code: 'ECONNREFUSED' }, 'no longer listening');
});

t.test('npm start on a fresh data dir: embedded database, generated certificate, demo key printed once', async (t) => {
  const dir = dataDir(t);
  // LABDATA_DATABASE_URL unset (cliEnv drops it): the server starts its own PostgreSQL under the data dir.
  const first = await serve(t, { LABDATA_DATA_DIR: dir });
  t.teardown(async () => {
    // Should the test fail half-way, do not leave the cluster this test started behind.
    const pid = Number((await readFile(join(dir, 'pg', 'postmaster.pid'), 'utf8').catch(() => '')).split('\n')[0]);
    if (pid && isRunning(pid)) process.kill(pid, 'SIGINT');
  });

  const cert = await readFile(join(dir, 'tls', 'cert.pem'), 'utf8');
  t.equal(((await stat(join(dir, 'tls', 'key.pem'))).mode & 0o777), 0o600, 'the private key is not world-readable');
  t.equal(await presentedFingerprint(first.port, cert), new X509Certificate(cert).fingerprint256, 'serves the certificate generated into the data dir');

  const printed = first.stdout();
  const keyLine = /API key \(shown once, keep it\): (key_[a-z2-7]{20}\.[A-Za-z0-9_-]{43})\n/.exec(printed);
  t.ok(keyLine, 'prints the demo key');
  const key = keyLine![1];
  t.match(printed, /Demo organization "[^"]+" created with admin \S+@\S+/);
  const curl = /Try: (curl .*)\n/.exec(printed)?.[1];
  t.equal(curl, `curl --insecure -H 'X-API-KEY: ${key}' ${first.url}/api/v1/projects`, 'a ready-to-paste curl line for the printed URL');
  t.match(printed, new RegExp(`listening on ${first.url}\\n$`), 'the ready line comes last');

  const projects = await get(`${first.url}/api/v1/projects`, { ca: cert, key });
  t.equal(projects.status, 200, 'the printed key works against the printed URL');
  t.same(projects.body.content, []);

  const pgPid = Number((await readFile(join(dir, 'pg', 'postmaster.pid'), 'utf8')).split('\n')[0]);
  t.ok(isRunning(pgPid), 'the embedded PostgreSQL runs');

  // The admin CLI on the same data dir joins the running cluster, and leaves it running.
  const boot = await runCliInProcess(['bootstrap', await tempFile({
    organizations: [{ ref: 'o', name: 'Second Lab' }],
    users: [{ ref: 'u', email: 'u@second.test', memberships: [{ organization: 'o' }] }],
    apiKeys: [{ ref: 'k', user: 'u', organization: 'o', name: 'k', days: 7 }],
  })], { LABDATA_DATA_DIR: dir });
  t.equal(boot.code, 0, boot.stderr);
  t.ok(isRunning(pgPid), 'the CLI did not stop the server\'s database');
  t.equal((await get(`${first.url}/api/v1/projects`, { ca: cert, key: boot.json.apiKeys.k.key })).status, 200, 'a key the CLI created works on the running server');
  t.same(await stop(first), { code: 0, signal: null }, 'SIGTERM: exit 0');
  t.notOk(isRunning(pgPid), 'and the embedded PostgreSQL is stopped');
  await t.rejects(stat(join(dir, 'pg', 'postmaster.pid')), { code: 'ENOENT' }, 'cleanly (no stale postmaster.pid)');

  // Second start on the same data dir: same certificate, same data, no new key.
  const second = await serve(t, { LABDATA_DATA_DIR: dir });
  t.equal(second.stdout(), `listening on ${second.url}\n`, 'no demo and no key the second time');
  t.equal(await readFile(join(dir, 'tls', 'cert.pem'), 'utf8'), cert, 'the certificate is kept');
  t.equal((await get(`${second.url}/api/v1/projects`, { ca: cert, key })).status, 200, 'the first key still works');
  const secondPgPid = Number((await readFile(join(dir, 'pg', 'postmaster.pid'), 'utf8')).split('\n')[0]);
  t.same(await stop(second, 'SIGINT'), { code: 0, signal: null }, 'SIGINT (Ctrl-C) stops it the same way');
  t.notOk(isRunning(secondPgPid));
});
