/**
 * What the benches share (bench/run.ts, bench/search.ts): child servers, their CPU and memory
 * from /proc, and one load round with autocannon after the database has gone quiet.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import readline from 'node:readline';
import autocannon from 'autocannon';
import type pg from 'pg';

export const root = path.resolve(import.meta.dirname, '..');
export const log = (line: string) => process.stderr.write(line + '\n');

export interface Target {
  url: string;
  method?: 'GET' | 'POST' | 'PUT';
  headers?: Record<string, string>;
  body?: string;
}

export interface Measure {
  requests: number;
  errors: number;
  seconds: number;
  p50: number[];
  p99: number[];
  cpuMs: number;
}

/** The node flags of package.json's `start` script (`exec node <flags> bin/labdata.js serve`). */
export function startFlags(): string[] {
  const start: string = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')).scripts.start;
  return start.split(/\s+/).filter((w) => w.startsWith('--'));
}

export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/** Starts a child and resolves when it prints a line matching `ready`. */
export async function startChild(args: string[], childEnv: NodeJS.ProcessEnv, ready: RegExp): Promise<{ child: ChildProcess; line: string }> {
  const child = spawn(process.execPath, args, { cwd: root, env: childEnv, stdio: ['ignore', 'pipe', 'ignore'] });
  const lines = readline.createInterface({ input: child.stdout! });
  const line = await new Promise<string>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited with ${code}`)));
    lines.on('line', (l) => ready.test(l) && resolve(l));
  });
  return { child, line };
}

/** utime + stime of a process, in ms (from /proc: clock ticks of 10 ms). */
export async function cpuMs(pid: number): Promise<number> {
  const stat = await fs.readFile(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

export async function peakRssMiB(pid: number): Promise<number> {
  const status = await fs.readFile(`/proc/${pid}/status`, 'utf8');
  return Math.round(Number(/VmHWM:\s+(\d+)/.exec(status)![1]) / 1024);
}

/** Waits until the database has no statement running (a round's stragglers must not overlap the next). */
export async function quiet(pool: pg.Pool): Promise<void> {
  for (let i = 0; i < 300; i++) {
    const { rows } = await pool.query(`select count(*)::int as n from pg_stat_activity where state = 'active' and pid <> pg_backend_pid() and backend_type = 'client backend'`);
    if (rows[0].n === 0) return;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** One round of load on `target`, added to `m`; `pid` is the server whose CPU it costs. */
export async function load(monitor: pg.Pool, target: Target, pid: number, m: Measure, opts: { connections: number; seconds: number }): Promise<void> {
  await quiet(monitor);
  const before = await cpuMs(pid);
  const result = await autocannon({
    url: target.url,
    method: target.method ?? 'GET',
    headers: target.headers,
    body: target.body,
    connections: opts.connections,
    duration: opts.seconds,
  });
  m.cpuMs += (await cpuMs(pid)) - before;
  m.requests += result['2xx'];
  m.errors += result.non2xx + result.errors + result.timeouts;
  m.seconds += result.duration;
  m.p50.push(result.latency.p50);
  m.p99.push(result.latency.p99);
}

export const empty = (): Measure => ({ requests: 0, errors: 0, seconds: 0, p50: [], p99: [], cpuMs: 0 });
export const perSecond = (m: Measure) => m.requests / m.seconds;
export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
