// `npm start` is `node bin/labdata.js serve`: helpers that spawn exactly that, as an operator would.
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cliEnv, launcher, projectRoot } from '../cli/labdata-cli.ts';

export type Tap = { teardown(fn: () => unknown): void };

export interface Served {
  proc: ChildProcess;
  url: string;
  port: number;
  stdout(): string;
  stderr(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Spawns `labdata serve`; `exited` settles when it ends. Never outlives the test. */
export function spawnServe(t: Tap, env: Record<string, string | undefined>) {
  const proc = spawn(process.execPath, [launcher, 'serve'], { cwd: projectRoot, env: cliEnv({ LABDATA_PORT: '0', ...env }) });
  let out = '';
  let err = '';
  proc.stdout!.on('data', (chunk) => (out += chunk));
  proc.stderr!.on('data', (chunk) => (err += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.once('exit', (code, signal) => {
      // Its last lines may still be in the pipes: wait for them to close (briefly, in case a
      // process it started holds them).
      const done = () => resolve({ code, signal });
      const timer = setTimeout(done, 2_000);
      proc.once('close', () => (clearTimeout(timer), done()));
    }),
  );
  t.teardown(async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), 20_000);
      await exited;
      clearTimeout(timer);
    }
  });
  return { proc, exited, stdout: () => out, stderr: () => err };
}

/** Starts `labdata serve` and resolves once it printed its ready line. */
export function serve(t: Tap, env: Record<string, string | undefined>): Promise<Served> {
  const s = spawnServe(t, env);
  return new Promise((resolve, reject) => {
    s.proc.stdout!.on('data', () => {
      const m = /listening on (https:\/\/[^\s:]+:(\d+))/.exec(s.stdout());
      if (m) resolve({ ...s, url: m[1], port: Number(m[2]) });
    });
    void s.exited.then(({ code, signal }) => reject(new Error(`labdata serve exited (${code ?? signal}) before it was ready:\n${s.stderr()}`)));
  });
}

export async function stop(served: Served, signal: NodeJS.Signals = 'SIGTERM') {
  served.proc.kill(signal);
  return served.exited;
}

/** GET over HTTPS trusting exactly `ca` (the generated certificate is not in the test CA list). */
export function get(url: string, opts: { ca?: string; key?: string; agent?: https.Agent } = {}): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = https.get(url, { ca: opts.ca, agent: opts.agent, headers: opts.key ? { 'x-api-key': opts.key } : {} }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, body: text ? JSON.parse(text) : undefined }));
    });
    req.on('error', reject);
  });
}

/** A data directory the embedded cluster's `postgres` user can reach when the tests run as root. */
export function dataDir(t: Tap, mode = 0o711): string {
  const dir = mkdtempSync(join(tmpdir(), 'labdata-serve-'));
  chmodSync(dir, mode);
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export const isRunning = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** The pid in the embedded cluster's postmaster.pid (0 when there is none). */
export function postmasterPid(dataDirectory: string): number {
  try {
    return Number(readFileSync(join(dataDirectory, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]);
  } catch {
    return 0;
  }
}

/** Stops a cluster a failed test left behind. */
export function stopLeftCluster(t: Tap, dataDirectory: string) {
  t.teardown(() => {
    const pid = postmasterPid(dataDirectory);
    if (pid && isRunning(pid)) process.kill(pid, 'SIGINT');
  });
}

/** Polls until `predicate` holds or `ms` pass; returns whether it held. */
export async function eventually(predicate: () => boolean, ms = 10_000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
  return true;
}

export { projectRoot };
