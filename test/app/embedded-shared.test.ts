// The embedded PostgreSQL shared by the server and admin commands (contract: the CLI "works whether
// or not the server is running"): processes join and leave in any order, and the cluster stops
// with the last one out, whoever started it (app/db/embedded.ts).
import t from 'tap';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { startEmbeddedDatabase, type DatabaseHandle } from '../../app/db/embedded.ts';
import { spawn } from 'node:child_process';
import { dataDir, eventually, isRunning, postmasterPid, projectRoot, stopLeftCluster } from '../support/serve-process.ts';
import { cliEnv } from '../cli/labdata-cli.ts';

const dir = dataDir(t);
stopLeftCluster(t, dir);

/** One process's use of the cluster, with what it logged. */
async function use(server = false, on = dir): Promise<DatabaseHandle & { logs: string[] }> {
  const logs: string[] = [];
  const handle = await startEmbeddedDatabase(on, (msg) => logs.push(msg), { server });
  return Object.assign(handle, { logs });
}

const said = (user: { logs: string[] }, line: RegExp) => user.logs.some((l) => line.test(l));

async function answers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return (await client.query('select 1 as one')).rows[0].one === 1;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

type Root = typeof t; // `t` is shadowed by the subtests' parameters
async function stopped(t: Pick<Root, 'ok' | 'notOk'>, pid: number) {
  t.ok(await eventually(() => !isRunning(pid), 20_000), 'the cluster stopped');
  t.notOk(existsSync(join(dir, 'pg', 'postmaster.pid')), 'cleanly: no postmaster.pid left');
}

t.test('three processes on a fresh data dir: one initialises and starts it, the others wait and join', async (t) => {
  const fresh = dataDir(t);
  stopLeftCluster(t, fresh);
  const users = await Promise.all([use(false, fresh), use(true, fresh), use(false, fresh)]);
  t.equal(users.filter((u) => said(u, /initialising the embedded PostgreSQL cluster/)).length, 1, 'initialised once');
  t.equal(users.filter((u) => said(u, /started on port/)).length, 1, 'started once');
  for (const u of users) t.ok(await answers(u.url), 'each one uses it');
  const pid = postmasterPid(fresh);
  for (const u of users) await u.stop();
  t.ok(await eventually(() => !isRunning(pid), 20_000), 'and it stops with the last');
  t.notOk(existsSync(join(fresh, 'pg.init.lock')), 'no init lock left behind');
});

t.test('a command that started the cluster leaves it to the server that joined; the server, last out, stops it', async (t) => {
  const command = await use();
  t.ok(said(command, /embedded PostgreSQL started on port/));
  const server = await use(true);
  t.ok(said(server, /using the embedded PostgreSQL already running on port/), 'the server joins it');
  const pid = postmasterPid(dir);

  await command.stop();
  t.ok(said(command, /leaving the embedded PostgreSQL running for the processes still using it/));
  t.ok(isRunning(pid), 'the cluster still runs');
  t.ok(await answers(server.url), 'and the server still uses it');

  await server.stop();
  await stopped(t, pid);
});

t.test('three commands started at once share one cluster, which stops with the last to finish', async (t) => {
  const commands = await Promise.all([use(), use(), use()]);
  const starters = commands.filter((c) => said(c, /started on port/));
  t.equal(starters.length, 1, 'one started it, the others joined');
  t.equal(new Set(commands.map((c) => c.url)).size, 1, 'all on the same cluster');
  const pid = postmasterPid(dir);
  // The one that started it finishes first.
  const order = [...starters, ...commands.filter((c) => !starters.includes(c))];
  for (const [i, command] of order.entries()) {
    await command.stop();
    if (i < order.length - 1) {
      t.ok(isRunning(pid), `after ${i + 1} finished, the cluster still runs`);
      t.ok(await answers(order[i + 1].url), 'for the ones still using it');
    }
  }
  await stopped(t, pid);
});

t.test('a server that started the cluster waits on its way out for a command still using it', async (t) => {
  const server = await use(true);
  const command = await use();
  const pid = postmasterPid(dir);
  let done = false;
  const stopping = server.stop().then(() => (done = true));
  t.ok(await eventually(() => said(server, /waiting for the admin commands still using the embedded PostgreSQL/)), 'says it waits');
  t.notOk(done, 'the server waits');
  t.ok(await answers(command.url), 'while the command keeps its database');
  await command.stop();
  await stopping;
  await stopped(t, pid);
});

t.test('a command stopped by Ctrl-C while it starts (the signal delivered twice, by the terminal and by npm) leaves no cluster behind', async (t) => {
  const fresh = dataDir(t);
  stopLeftCluster(t, fresh);
  const child = spawn(process.execPath, [join(projectRoot, 'bin/labdata.js'), 'migrate'], { env: cliEnv({ LABDATA_DATA_DIR: fresh, LABDATA_LOG_LEVEL: 'info' }) });
  let stderr = '';
  child.stderr.on('data', (c) => (stderr += c));
  child.stdout.resume();
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  t.ok(await eventually(() => /embedded PostgreSQL started on port/.test(stderr), 30_000), 'it started the cluster');
  const pid = postmasterPid(fresh);
  child.kill('SIGINT');
  setTimeout(() => child.kill('SIGINT'), 10);
  t.equal(await exited, 130, 'exit 130');
  t.ok(await eventually(() => !isRunning(pid), 20_000), 'the cluster it started is stopped');
  t.notOk(existsSync(join(fresh, 'pg', 'postmaster.pid')), 'cleanly: no postmaster.pid left');
});
