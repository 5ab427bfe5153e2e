import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import { join } from 'node:path';
import tls from 'node:tls';
import { dataDir, eventually, get, isRunning, postmasterPid, projectRoot, serve, stop, stopLeftCluster } from '../support/serve-process.ts';

// Real signals on a real `labdata serve` with its embedded PostgreSQL: what an operator's
// Ctrl-C, `kill` or a crash does.

const plugins = `users,projects,${join(projectRoot, 'test/fixtures/plugins/slow-read/index.ts')}`;
const dir = dataDir(t);
stopLeftCluster(t, dir);
const demoKey = (stdout: string) => /API key \(shown once, keep it\): (\S+)\n/.exec(stdout)?.[1];

/** A client connection that resolves once open (TLS: after the handshake), and tells when it closed. */
function openSocket(connect: () => net.Socket, ready: string) {
  const socket = connect();
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.on('error', () => {});
  return { socket, closed, open: new Promise<void>((resolve) => socket.once(ready, () => resolve())) };
}

t.test('SIGTERM: pre-connected and idle connections close at once, the request in flight finishes, exit 0, no PostgreSQL left', async (t) => {
  const served = await serve(t, { LABDATA_DATA_DIR: dir, LABDATA_PLUGINS: plugins, LABDATA_LOG_LEVEL: 'info' });
  const key = demoKey(served.stdout())!;
  const ca = readFileSync(join(dir, 'tls', 'cert.pem'), 'utf8');
  const pgPid = postmasterPid(dir);
  t.ok(pgPid && isRunning(pgPid), 'the embedded PostgreSQL runs');
  t.match(served.stderr(), /"msg":"Server listening at https:\/\/127\.0\.0\.1:\d+"/, 'the start log line says https://');

  // What browsers and connection pools hold open: a TLS connection that never sent a request,
  // a TCP connection still before its handshake, and a keep-alive connection after a request.
  const preTls = openSocket(() => tls.connect({ host: '127.0.0.1', port: served.port, ca, servername: 'localhost' }), 'secureConnect');
  const preTcp = openSocket(() => net.connect({ host: '127.0.0.1', port: served.port }), 'connect');
  await Promise.all([preTls.open, preTcp.open]);
  const agent = new https.Agent({ keepAlive: true, maxSockets: 1 });
  t.teardown(() => agent.destroy());
  t.equal((await get(`${served.url}/api/v1/projects`, { ca, key, agent })).status, 200);
  const idle = Object.values(agent.freeSockets).flat()[0]!;
  t.ok(idle, 'a keep-alive connection is left idle');
  const idleClosed = new Promise<void>((resolve) => idle.once('close', () => resolve()));

  const inFlight = get(`${served.url}/api/v1/slow`, { ca, key });
  t.ok(await eventually(() => served.stderr().includes('slow-read: started')), 'a slow request is in flight');
  const exited = stop(served, 'SIGTERM');
  t.same(await inFlight, { status: 200, body: { done: true } }, 'the request in flight gets its answer');
  await Promise.all([preTls.closed, preTcp.closed, idleClosed]);
  t.pass('the server closed the pre-connected and idle connections');
  t.same(await exited, { code: 0, signal: null }, 'exit 0');
  t.notOk(isRunning(pgPid), 'the embedded PostgreSQL is stopped');
  t.notOk(existsSync(join(dir, 'pg', 'postmaster.pid')), 'cleanly: no postmaster.pid left');
  t.match(served.stderr(), /"msg":"stopped"/);
});

t.test('a killed server (SIGKILL) takes its embedded PostgreSQL with it; Ctrl-C under npm start stops cleanly', async (t) => {
  const served = await serve(t, { LABDATA_DATA_DIR: dir, LABDATA_PLUGINS: plugins });
  const pgPid = postmasterPid(dir);
  t.ok(pgPid && isRunning(pgPid));
  t.same(await stop(served, 'SIGKILL'), { code: null, signal: 'SIGKILL' });
  t.ok(await eventually(() => !isRunning(pgPid), 20_000), 'the orphaned PostgreSQL stops by itself');
  // And the next start finds the data intact.
  const again = await serve(t, { LABDATA_DATA_DIR: dir, LABDATA_PLUGINS: plugins });
  t.equal(again.stdout(), `listening on ${again.url}\n`, 'same database: no new demo key');
  // Ctrl-C under `npm start` arrives twice at once: from the terminal and forwarded by npm.
  const againPg = postmasterPid(dir);
  again.proc.kill('SIGINT');
  again.proc.kill('SIGINT');
  t.same(await again.exited, { code: 0, signal: null }, 'exit 0, not the forced exit of a second Ctrl-C');
  t.notOk(isRunning(againPg), 'the embedded PostgreSQL is stopped');
});
