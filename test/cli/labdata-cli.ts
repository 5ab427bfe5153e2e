// Runs the real launcher (`bin/labdata.js`) as an operator would, with this same node binary.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export const projectRoot = resolve(import.meta.dirname, '../..');
export const launcher = join(projectRoot, 'bin/labdata.js');

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
  /** stdout parsed as JSON (undefined when it is empty or not JSON). */
  json: any;
  /** The `labdata: ...` reason lines on stderr (logs are JSON lines and are left out). */
  reasons: string[];
}

/** Environment for a CLI run: the test process's, minus anything that would pick another database. */
export function cliEnv(env: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = { ...process.env, LABDATA_LOG_LEVEL: 'warn' };
  delete base.LABDATA_DATABASE_URL;
  delete base.LABDATA_PLUGINS;
  delete base.LABDATA_ENTERPRISE;
  // tap's own hooks (NODE_OPTIONS --import of @tapjs/processinfo, for coverage) are not part of
  // an operator's process, and cost a third of a second of CPU per launch.
  delete base.NODE_OPTIONS;
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined) delete base[k];
    else base[k] = v;
  }
  return base;
}

export function runCli(args: string[], env: Record<string, string | undefined>): Promise<CliResult> {
  return new Promise((done, fail) => {
    execFile(process.execPath, [launcher, ...args], { cwd: projectRoot, env: cliEnv(env), timeout: 60_000 }, (err, stdout, stderr) => {
      if (err && typeof err.code !== 'number') return fail(err);
      done(cliResult(typeof err?.code === 'number' ? err.code : 0, stdout, stderr));
    });
  });
}

/**
 * The same CLI run (app/cli/cli.ts) inside this test process, with the same environment: for
 * tests about what a command does, not about the process around it, which runCli covers. It
 * spares a Node start-up (about a second of CPU) per run.
 */
export async function runCliInProcess(args: string[], env: Record<string, string | undefined>): Promise<CliResult> {
  const { runCli: run } = await import('../../app/cli/cli.ts');
  let stdout = '';
  let stderr = '';
  const code = await run(args, {
    env: cliEnv(env),
    stdout: { write: (text: string) => (stdout += text) },
    stderr: { write: (text: string) => (stderr += text) },
  });
  return cliResult(code, stdout, stderr);
}

function cliResult(code: number, stdout: string, stderr: string): CliResult {
  let json: unknown;
  try {
    json = stdout.trim() ? JSON.parse(stdout) : undefined;
  } catch {
    json = undefined;
  }
  const reasons = stderr.split('\n').filter((line) => line.startsWith('labdata:'));
  return { code, stdout, stderr, json, reasons };
}

let tempDir: string | undefined;
let tempCount = 0;

/** Writes `content` (JSON-encoded unless a string) to a temporary file and returns its path. */
export async function tempFile(content: unknown): Promise<string> {
  if (!tempDir) {
    const dir = (tempDir = mkdtempSync(join(tmpdir(), 'labdata-cli-')));
    process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  }
  const file = join(tempDir, `file-${++tempCount}.json`);
  await writeFile(file, typeof content === 'string' ? content : JSON.stringify(content));
  return file;
}
