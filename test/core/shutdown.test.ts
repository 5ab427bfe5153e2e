import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import { join } from 'node:path';
import tls from 'node:tls';
import { spawn } from 'node:child_process';
import pg from 'pg';
import { cliEnv } from '../cli/labdata-cli.ts';
import { migratedDatabase } from '../support/server.ts';
import { dataDir, eventually, get, isRunning, postmasterPid, projectRoot, serve, spawnServe, stop, stopLeftCluster, type Tap } from '../support/serve-process.ts';

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
  // Written before the ready line (app/server.ts flushes the log first); this process reads the
  // two pipes in its own order, so the line may reach it a moment after the ready line.
  t.ok(await eventually(() => /"msg":"Server listening at https:\/\/127\.0\.0\.1:\d+"/.test(served.stderr()), 1_000), 'the start log line says https://');

  // What browsers and connection pools hold open: a TLS connection that never sent a request,
  // a TCP connection still before its handshake, and a keep-alive connection after a request.
  const preTls = openSocket(() => tls.connect({ host: '127.0.0.1', port: served.port, ca, servername: 'localhost' }), 'secureConnect');
  const preTcp = openSocket(() => net.connect({ host: '127.0.0.1', port: served.port }), 'connect');
  await Promise.all([preTls.open, preTcp.open]);
  const agent = new https.Agent({ keepAlive: true, maxSockets: 1 });
  t.teardown(() => agent.destroy());
  t.equal((await get(`${served.url}/api/v1/projects`, { ca, key, agent })).status, 200);
  // The server's log is buffered (app/runtime.ts): a quiet server still writes its lines out soon.
  t.ok(await eventually(() => /"route":"\/api\/v1\/projects".*"msg":"request completed"/.test(served.stderr()), 2_000),
    'the request\'s log line is written within two seconds, with no further traffic');
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

t.test('SIGTERM after the client gave up: its handler still runs to the end, its query included, before the pool closes', async (t) => {
  // A data directory of its own: the demo key is printed only when the demo organization is made.
  const own = dataDir(t);
  stopLeftCluster(t, own);
  const served = await serve(t, { LABDATA_DATA_DIR: own, LABDATA_PLUGINS: plugins, LABDATA_LOG_LEVEL: 'info' });
  const key = demoKey(served.stdout())!;
  const ca = readFileSync(join(own, 'tls', 'cert.pem'), 'utf8');
  const request = https.get(`${served.url}/api/v1/slow`, { ca, headers: { 'x-api-key': key } });
  request.on('error', () => {});
  t.ok(await eventually(() => served.stderr().includes('slow-read: started')), 'a slow request is in flight');
  request.destroy();
  await new Promise((resolve) => setTimeout(resolve, 100));
  t.same(await stop(served, 'SIGTERM'), { code: 0, signal: null }, 'exit 0');
  t.match(served.stderr(), /slow-read: finished/, 'the handler ran its query after the client left');
  t.notMatch(served.stderr(), /"level":50/, 'nothing failed on the way out');
});

t.test('a killed server (SIGKILL) takes its embedded PostgreSQL with it; npm start stopped by a service manager or Ctrl-C leaves nothing behind', async (t) => {
  const served = await serve(t, { LABDATA_DATA_DIR: dir, LABDATA_PLUGINS: plugins });
  const pgPid = postmasterPid(dir);
  t.ok(pgPid && isRunning(pgPid));
  t.same(await stop(served, 'SIGKILL'), { code: null, signal: 'SIGKILL' });
  t.ok(await eventually(() => !isRunning(pgPid), 20_000), 'the orphaned PostgreSQL stops by itself');
  // The next start (through `npm start`) finds the data intact.
  const npm = spawn('npm', ['start', '--silent'], { cwd: projectRoot, env: cliEnv({ LABDATA_DATA_DIR: dir, LABDATA_PLUGINS: plugins, LABDATA_PORT: '0' }), detached: true });
  const npmExited = new Promise<number | null>((resolve) => npm.once('exit', (code) => resolve(code)));
  t.teardown(() => {
    try {
      process.kill(-npm.pid!, 'SIGKILL');
    } catch {
      // the group is gone already
    }
  });
  let out = '';
  npm.stdout!.on('data', (c) => (out += c));
  npm.stderr!.resume();
  t.ok(await eventually(() => out.includes('listening on https://'), 60_000), 'npm start serves');
  t.notMatch(out, /API key/, 'same database: no new demo key');
  const againPg = postmasterPid(dir);
  const serverPid = Number(readFileSync(`/proc/${againPg}/stat`, 'utf8').split(') ')[1].split(' ')[1]);
  t.ok(isRunning(serverPid), 'the server runs under npm');
  // A service manager stops npm (SIGTERM to its pid only: npm forwards it to the server), and
  // the server is signalled twice at once, as a Ctrl-C in a terminal does (the terminal signals
  // the whole process group, npm forwards it once more).
  process.kill(serverPid, 'SIGINT');
  process.kill(npm.pid!, 'SIGTERM');
  t.equal(await npmExited, 0, 'npm start ends with 0: the server got the signal and stopped cleanly, not by a forced second signal');
  t.ok(await eventually(() => !isRunning(serverPid)), 'no node process left');
  t.notOk(isRunning(againPg), 'no PostgreSQL process left');
});

/**
 * Waits until `run` has used 150 ms of CPU: past Node's own start (about 50 ms), well before its
 * modules have loaded (over a second). CPU time, not wall time, whatever else the machine runs.
 */
async function loading(run: { proc: { pid?: number; exitCode: number | null } }): Promise<boolean> {
  const cpuMs = () => {
    const fields = readFileSync(`/proc/${run.proc.pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  };
  return eventually(() => run.proc.exitCode !== null || cpuMs() >= 150, 20_000);
}

/** `labdata serve` with the users plugin on `url`, logging at info. */
const serveUsers = (t: Tap, url: string) =>
  spawnServe(t, {
    LABDATA_DATABASE_URL: url,
    LABDATA_DATA_DIR: dataDir(t),
    LABDATA_TLS_CERT: process.env.LABDATA_TEST_TLS_CERT!,
    LABDATA_TLS_KEY: process.env.LABDATA_TEST_TLS_KEY!,
    LABDATA_PLUGINS: 'users',
    LABDATA_LOG_LEVEL: 'info',
  });

/**
 * `labdata serve` on a database of its own, held in its start-up: the test holds the migration
 * lock, so the server waits for it (core/db/orm.ts `migrate`) until `release()`.
 */
async function startingServer(t: Tap) {
  // Migrated already: once let go, the start-up must finish well within the 10 s a stop waits for it.
  const url = await migratedDatabase(t, ['users']);
  const holder = new pg.Client({ connectionString: url });
  await holder.connect();
  t.teardown(() => holder.end());
  const lock = `hashtext('labdata migrations')`;
  await holder.query(`select pg_advisory_lock(${lock})`);
  const run = serveUsers(t, url);
  const deadline = Date.now() + 30_000;
  let waiting = false;
  while (!waiting && Date.now() < deadline && run.proc.exitCode === null) {
    const rows = await holder.query(`select 1 from pg_locks where locktype = 'advisory' and not granted and database = (select oid from pg_database where datname = current_database())`);
    waiting = rows.rowCount! > 0;
    if (!waiting) await new Promise((r) => setTimeout(r, 50));
  }
  const release = () => holder.query(`select pg_advisory_unlock(${lock})`);
  return { run, waiting, release };
}

/** The exit of `run`, or 'still running' after `ms`. */
const exitWithin = (run: { exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }> }, ms: number) =>
  Promise.race([run.exited, new Promise<string>((resolve) => setTimeout(() => resolve('still running'), ms).unref())]);

t.test('SIGTERM while the server is starting: it finishes starting, then stops, exit 0', async (t) => {
  // README "Operations": "A stop requested while the server is still starting takes effect once it has started."
  const { run, waiting, release } = await startingServer(t);
  t.ok(waiting, 'the server is starting (waiting for the migration lock)');
  run.proc.kill('SIGTERM');
  // Let the signal arrive while the server still waits: one that came after the start would pass without the rule.
  await new Promise((r) => setTimeout(r, 500));
  t.equal(run.proc.exitCode, null, 'the signal does not end the start half-way');
  await release();
  t.same(await exitWithin(run, 30_000), { code: 0, signal: null }, 'exit 0, without a second signal');
  t.match(run.stdout(), /listening on https:\/\//, 'it had started');
  t.match(run.stderr(), /"msg":"stopped"/);
});

t.test('SIGTERM while the modules still load: taken as a stop during start-up, exit 0 once started', async (t) => {
  // README "Operations": a stop requested while the server is still starting takes effect once
  // it has started. Loading the modules is the first second or two of that: the default action
  // would kill it there, exit 143.
  const url = await migratedDatabase(t, ['users']);
  const run = serveUsers(t, url);
  t.ok(await loading(run), 'it has run 150 ms');
  t.notMatch(run.stderr(), /"msg"/, 'and logged nothing yet: still loading');
  run.proc.kill('SIGTERM');
  t.same(await exitWithin(run, 30_000), { code: 0, signal: null }, 'exit 0, not killed');
  t.match(run.stdout(), /listening on https:\/\//, 'it had started');
  t.match(run.stderr(), /"msg":"stopped"/);
});

t.test('a second signal while still starting, more than a second later: exit 1 at once', async (t) => {
  // README "Operations": "a later second signal exits 1 at once".
  const { run, waiting } = await startingServer(t);
  t.ok(waiting, 'the server is starting (waiting for the migration lock)');
  run.proc.kill('SIGINT');
  // Well past the 1 s in which a repeat counts as the same request, however late the first is handled.
  await new Promise((r) => setTimeout(r, 2_000));
  t.equal(run.proc.exitCode, null, 'the first signal alone does not end a start');
  run.proc.kill('SIGINT');
  t.same(await exitWithin(run, 10_000), { code: 1, signal: null }, 'exit 1 while the lock is still held');
  t.match(run.stderr(), /SIGINT again while starting/);
  t.notMatch(run.stdout(), /listening on/, 'it never started');
});

t.test('a stop requested during a start-up that cannot finish gives up after 10 s: exit 1, one line', async (t) => {
  // README "Operations": "... or after 10 s with exit 1 if start-up has not finished by then".
  const { run, waiting } = await startingServer(t);
  t.ok(waiting, 'the server is starting (held in its migrations)');
  const sent = Date.now();
  run.proc.kill('SIGTERM');
  t.same(await exitWithin(run, 20_000), { code: 1, signal: null }, 'exit 1 without a second signal, the lock still held');
  t.ok(Date.now() - sent >= 9_500, 'not before the 10 s');
  t.match(run.stderr(), /labdata: SIGTERM while starting, and start-up did not finish within 10 s: exiting/);
  t.notMatch(run.stdout(), /listening on/, 'it never started');
});
