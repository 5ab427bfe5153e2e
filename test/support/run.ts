// Test runner wrapper: `npm test [-- <tap args or test files>]`.
//
// It gives every test process the shared infrastructure they cannot set up on their own:
//   - one PostgreSQL server (embedded; with --stock, Debian's packaged server with its default
//     settings, test/support/stock-postgres.ts; or the one LABDATA_DATABASE_URL points at),
//     exposed as LABDATA_TEST_ADMIN_URL; test/support/db.ts creates a database per test through it;
//   - one self-signed certificate (LABDATA_TEST_TLS_CERT / LABDATA_TEST_TLS_KEY) that the
//     test processes trust through NODE_EXTRA_CA_CERTS, so HTTPS is tested with verification on.
// Then it runs tap (configured in .taprc) and prints `N passed, N failed` as its last line. The
// whole suite runs a few files per process (writeGroups, test/support/group.ts); files named on
// the command line run a process each.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { constants, tmpdir } from 'node:os';
import { dirname, join, parse as parsePath, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type FinalResults, Parser } from 'tap-parser';
import { ensureCertificate } from '../../app/tls.ts';

const projectRoot = resolve(import.meta.dirname, '../..');
// tap always saves each test file's raw TAP output here (the data behind `tap replay`).
const tapResultsDir = join(projectRoot, '.tap/test-results');

interface Database {
  adminUrl: string;
  stop(): Promise<void>;
}

interface Counts {
  passed: number;
  failed: number;
}

/** What a signal handler has to shut down; filled in as main() gets going. */
const running: { db?: Database; tap?: ChildProcess } = {};

async function main(): Promise<number> {
  stopOnSignals();
  const args = process.argv.slice(2);
  // `--typecheck` (npm test): tsc runs beside the suite instead of before it — it is one
  // core's work for a quarter of a minute while the database starts and tests begin. `--lint`
  // (npm test): the boundary lint and the import-circle check run beside it the same way.
  const checks = CHECKS.filter((c) => args.includes(c.flag)).map((c) => ({ name: c.name, failure: runCheck(c) }));
  const workDir = await makeWorkDir();
  const env: NodeJS.ProcessEnv = { ...process.env, ...(await prepareTls(workDir)) };
  // `npm test -- --stock`: the whole suite on a stock server (JIT on, durable), as operators run it.
  const stock = args.includes(STOCK_FLAG);

  // Every test file and CLI run is a fresh Node process compiling the same modules: cache the
  // compiled code on disk (Node's compile cache), which roughly halves their start-up CPU.
  env.NODE_COMPILE_CACHE ??= join(tmpdir(), 'labdata-test-compile-cache');
  // tap's build while the database starts.
  [running.db] = await Promise.all([prepareDatabase(workDir, stock), ensureTapBuild()]);
  env.LABDATA_TEST_ADMIN_URL = running.db.adminUrl;
  // Names this run's migrated template databases (test/support/db.ts).
  env.LABDATA_TEST_RUN_ID = randomBytes(4).toString('hex');
  // One sealing key for test servers and the CLI runs they share a database with; never a
  // generated ./.data/secret.key in the working tree.
  env.LABDATA_SECRET_KEY ??= randomBytes(32).toString('base64');
  const processinfoOff = `--import=${pathToFileURL(join(projectRoot, 'test/support/processinfo-off.ts'))}`;
  env.NODE_OPTIONS = [processinfoOff, env.NODE_OPTIONS].filter(Boolean).join(' ');
  let tapExitCode: number;
  try {
    // Stale results of files not run this time would be counted otherwise.
    await rm(tapResultsDir, { recursive: true, force: true });
    const tapArgs = args.filter((a) => a !== STOCK_FLAG && !CHECKS.some((c) => c.flag === a));
    // The whole suite (no file named): files grouped into fewer processes.
    const files = tapArgs.some((a) => !a.startsWith('-')) ? expandFolders(tapArgs) : [...tapArgs, ...(await writeGroups())];
    tapExitCode = await runTap(files, env);
  } finally {
    await running.db.stop();
  }

  const counts = await countResults(tapResultsDir);
  // tap can fail without a failing test point (bad arguments, no test files found, a
  // coverage gate): never report "0 failed" together with a failing exit code.
  if (tapExitCode !== 0 && counts.failed === 0) counts.failed = 1;
  for (const check of checks) {
    const failure = await check.failure;
    if (!failure) continue;
    process.stdout.write(`\n${check.name} failed:\n${failure}\n`);
    counts.failed += 1;
  }
  printSummary(counts);
  return counts.failed === 0 ? 0 : 1;
}

/**
 * A fresh directory for the database cluster and the certificate, removed when this process
 * exits, however it exits (the `exit` event also fires when a signal handler calls exit).
 */
async function makeWorkDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'labdata-test-'));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  // mkdtemp creates 0700; when we run as root the cluster directory inside is owned by the
  // `postgres` user, which must be able to traverse down to it.
  chmodSync(dir, 0o711);
  return dir;
}

/** Env vars for the test processes: certificate paths, and the certificate as a trusted CA. */
async function prepareTls(workDir: string): Promise<NodeJS.ProcessEnv> {
  const { cert } = await ensureCertificate(workDir);
  const certPath = join(workDir, 'tls', 'cert.pem');
  // NODE_EXTRA_CA_CERTS is read once, when a Node process starts: it has to be in the env the
  // test processes start with (setting it from inside a test does nothing). Both fetch
  // (undici) and https.request accept the self-signed leaf as its own trust anchor.
  // A CA bundle the developer already relies on (e.g. a corporate proxy) is kept.
  let caPath = certPath;
  const existing = process.env.NODE_EXTRA_CA_CERTS;
  if (existing) {
    caPath = join(workDir, 'tls', 'extra-ca.pem');
    await writeFile(caPath, `${await readFile(existing, 'utf8')}\n${cert}`);
  }
  return {
    LABDATA_TEST_TLS_CERT: certPath,
    LABDATA_TEST_TLS_KEY: join(workDir, 'tls', 'key.pem'),
    NODE_EXTRA_CA_CERTS: caPath,
  };
}

const STOCK_FLAG = '--stock';

/** An existing server when LABDATA_DATABASE_URL is set (e.g. a CI service), a stock one with --stock, else an embedded one. */
async function prepareDatabase(workDir: string, stock: boolean): Promise<Database> {
  const external = process.env.LABDATA_DATABASE_URL;
  if (external) return { adminUrl: external, stop: async () => {} };
  if (stock) return startStockPostgres(workDir);
  return startEmbeddedPostgres(workDir);
}

async function startStockPostgres(workDir: string): Promise<Database> {
  assertTraversable(workDir);
  const { startStockCluster } = await import('./stock-postgres.ts');
  const dir = join(workDir, 'stock');
  const cluster = await startStockCluster(dir);
  const { rows } = await queryOnce(cluster.url(), `select version(), current_setting('jit') as jit`);
  process.stdout.write(`stock server: ${rows[0].version.split(',')[0]}, jit ${rows[0].jit}\n`);
  return {
    adminUrl: cluster.url(),
    stop: async () => {
      await cluster.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

async function queryOnce(url: string, text: string): Promise<{ rows: Record<string, string>[] }> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await client.query(text);
  } finally {
    await client.end();
  }
}

async function startEmbeddedPostgres(workDir: string): Promise<Database> {
  assertTraversable(workDir);
  // The server's own way to run the packaged PostgreSQL (app/db/postgres-cluster.ts): the
  // password goes through a private file next to the cluster, never a world-readable one in /tmp.
  const cluster = await import('../../app/db/postgres-cluster.ts');
  const password = randomBytes(18).toString('hex');
  const port = await findFreePort();
  const account = await cluster.clusterAccount();
  const bin = await cluster.binariesFor(account, () => {});
  const dir = join(workDir, 'pg');
  await cluster.prepareClusterDir(dir, account);
  await cluster.initCluster(bin, dir, 'labdata', password, account);
  // No durability: the cluster is thrown away after the run anyway.
  const running = await cluster.startCluster(bin, dir, port, account, ['fsync=off', 'synchronous_commit=off', 'full_page_writes=off']);
  return {
    adminUrl: `postgresql://labdata:${password}@127.0.0.1:${port}/postgres`,
    stop: async () => {
      await running.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * As root, the cluster runs as the `postgres` user, which needs search (x) permission on
 * every parent of its directory. A TMPDIR under /root would otherwise fail deep inside
 * initdb with a confusing message.
 */
function assertTraversable(dir: string): void {
  if (process.getuid?.() !== 0) return;
  for (let d = dirname(dir); d !== parsePath(d).root; d = dirname(d)) {
    if ((statSync(d).mode & 0o001) === 0) {
      throw new Error(`${d} is not traversable by the postgres user; point TMPDIR elsewhere (e.g. /tmp)`);
    }
  }
}

/** Asks the OS for an unused port by listening on port 0, then releases it for postgres. */
function findFreePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => (port ? resolvePort(port) : reject(new Error('no port assigned'))));
    });
  });
}

/**
 * Runs tap's CLI with this same node binary; resolves with tap's exit code.
 *
 * tap gets its own process group (`detached`) so that a signal can reach every test process
 * at once: tap 21 does not reliably pass a SIGTERM on to test files that are still running,
 * which would leave them behind, talking to a database that is gone.
 */
function runTap(args: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const tap = spawn(process.execPath, [tapBin(), ...args], { cwd: projectRoot, env, stdio: 'inherit', detached: true });
  running.tap = tap;
  // If we exit while tap still runs (a signal), take the whole group down with us.
  const killGroup = () => signalTapGroup('SIGKILL');
  process.on('exit', killGroup);
  return new Promise((resolveCode, reject) => {
    tap.once('error', reject);
    tap.once('exit', (code, signal) => {
      running.tap = undefined;
      process.off('exit', killGroup);
      resolveCode(code ?? (signal ? 1 : 0));
    });
  });
}

/** Sends a signal to tap and all the test processes it started (they share its group). */
function signalTapGroup(signal: NodeJS.Signals): void {
  const pid = running.tap?.pid;
  if (pid === undefined) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // ESRCH: the group is already gone.
  }
}

/** A package's CLI script, found through its package.json (bin files are not exports). */
function binOf(pkgName: string, bin: string): string {
  // Not require.resolve('x/package.json'): a package whose exports omit it (dependency-cruiser) refuses that.
  const pkgPath = join(projectRoot, 'node_modules', pkgName, 'package.json');
  const pkg = JSON.parse(readFileSync(pkgPath, 'utf8')) as { bin: string | Record<string, string> };
  return join(dirname(pkgPath), typeof pkg.bin === 'string' ? pkg.bin : pkg.bin[bin]);
}

/**
 * `npm test -- test/plugins/notes`: a folder stands for the .test.ts files below it (tap only
 * looks for its own default extensions in a folder it is given).
 */
function expandFolders(args: string[]): string[] {
  return args.flatMap((arg) => {
    if (arg.startsWith('-') || !existsSync(arg) || !statSync(arg).isDirectory()) return [arg];
    const files = readdirSync(arg, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.test.ts')).sort();
    return files.length ? files.map((f) => join(arg, f)) : [arg];
  });
}

/** Where the full run's group files go (tap saves their results under .tap/test-results/ too). */
const GROUPS_DIR_NAME = '.tap/groups';

/**
 * How many test files share a process in the full run (test/support/group.ts), unless
 * LABDATA_TEST_GROUP_SIZE says otherwise (1: a process per file, as tap does by itself).
 * Larger groups save more start-up CPU but leave tap's three workers unevenly loaded at the end.
 */
const DEFAULT_GROUP_SIZE = 4;

/**
 * The full run's test files, as group files of a few each: written to .tap/groups/, each runs
 * its files one after the other in one process. A group holds files that are neighbours by path;
 * the groups go to tap largest (in bytes of test code) first, so that a long one seldom starts last.
 */
async function writeGroups(): Promise<string[]> {
  const size = Number(process.env.LABDATA_TEST_GROUP_SIZE ?? DEFAULT_GROUP_SIZE);
  if (!Number.isInteger(size) || size < 1) throw new Error(`LABDATA_TEST_GROUP_SIZE must be a positive integer, not ${process.env.LABDATA_TEST_GROUP_SIZE}`);
  const files = expandFolders([join(projectRoot, 'test')]);
  if (size === 1) return files.map(relativeToRoot);
  const dir = join(projectRoot, GROUPS_DIR_NAME);
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  const groups: string[][] = [];
  for (let i = 0; i < files.length; i += size) groups.push(files.slice(i, i + size));
  const weight = (group: string[]) => group.reduce((sum, f) => sum + statSync(f).size, 0);
  groups.sort((a, b) => weight(b) - weight(a));
  const runner = pathToFileURL(join(projectRoot, 'test/support/group.ts')).href;
  return Promise.all(
    groups.map(async (group, i) => {
      const path = join(dir, `group-${String(i + 1).padStart(2, '0')}.test.ts`);
      await writeFile(path, `// Written by test/support/run.ts for this run.\nimport { runGroup } from ${JSON.stringify(runner)};\nawait runGroup(${JSON.stringify(projectRoot)}, ${JSON.stringify(group)});\n`);
      return relativeToRoot(path);
    }),
  );
}

function relativeToRoot(path: string): string {
  return path.slice(projectRoot.length + 1);
}

function tapBin(): string {
  return binOf('tap', 'tap');
}

/**
 * tap hands its test processes the loader flags of the @tapjs/test build it runs with, and
 * rebuilds that for the plugin list of .taprc only afterwards. Right after `npm ci` (tap's
 * default build), the first run would start every test file with the loaders of the plugins
 * .taprc turns off (@tapjs/typescript, @tapjs/mock), at about twice the CPU. So build first:
 * once per install of @tapjs/test (the stamp lives in its build folder) and per .taprc.
 */
async function ensureTapBuild(): Promise<void> {
  const stamp = join(projectRoot, 'node_modules/@tapjs/test/test-built/.labdata-taprc');
  const taprc = readFileSync(join(projectRoot, '.taprc'), 'utf8');
  if (existsSync(stamp) && readFileSync(stamp, 'utf8') === taprc) return;
  const build = spawn(process.execPath, [tapBin(), 'build'], { cwd: projectRoot, stdio: ['ignore', 'ignore', 'inherit'] });
  const code = await new Promise<number | null>((done, fail) => build.once('error', fail).once('exit', done));
  if (code !== 0) throw new Error(`tap build failed (exit code ${code})`);
  writeFileSync(stamp, taprc);
}

/** The checks that run beside the suite, each behind its flag (npm test passes both). */
const CHECKS = [
  { flag: '--typecheck', name: 'tsc --noEmit', pkg: 'typescript', bin: 'tsc', args: ['--noEmit'] },
  // The layer boundaries (eslint.config.js, docs/architecture.md) and typescript-eslint.
  { flag: '--lint', name: 'eslint', pkg: 'eslint', bin: 'eslint', args: ['.'] },
  // No import circles, type-only ones included (.dependency-cruiser.mjs).
  { flag: '--lint', name: 'depcruise', pkg: 'dependency-cruiser', bin: 'depcruise', args: ['--config', '.dependency-cruiser.mjs', '.'] },
];

/** A check in the background: resolves to its output when it fails (the rule's message), else to ''. */
function runCheck(check: (typeof CHECKS)[number]): Promise<string> {
  return new Promise((resolveOutput) => {
    const child = spawn(process.execPath, [binOf(check.pkg, check.bin), ...check.args], { cwd: projectRoot, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (c) => (output += c));
    child.stderr.on('data', (c) => (output += c));
    child.on('error', (err) => resolveOutput(String(err)));
    child.on('close', (code) => resolveOutput(code === 0 ? '' : output || `exit code ${code}`));
  });
}

/**
 * On SIGINT/SIGTERM: pass the signal on to tap's process group (being a separate group, it
 * does not get the terminal's Ctrl-C by itself), stop the database, and exit with the usual
 * 128+signal code; the exit handler of runTap() then kills whatever is left of the group.
 * stop() is safe to call twice, and the cluster also dies with this process (pdeathsig).
 * No summary line is printed for an interrupted run.
 */
function stopOnSignals(): void {
  let stopping = false;
  const onSignal = async (signal: NodeJS.Signals) => {
    if (stopping) return; // a second Ctrl-C while already shutting down
    stopping = true;
    signalTapGroup(signal);
    await running.db?.stop().catch(() => {});
    process.exit(128 + constants.signals[signal]);
  };
  process.on('SIGINT', onSignal).on('SIGTERM', onSignal);
}

/**
 * Pass/fail counts from tap's own results. For every test file tap saves its raw TAP output
 * as .tap/test-results/<file>.tap; each is parsed with tap-parser, the parser tap itself
 * uses. This leaves the normal reporter alone on the console (tap has only one reporter).
 *
 * A "test point" is a top-level `ok`/`not ok` line of a test file: each `t.test(...)` counts
 * once (any failure inside makes it fail), and so does each top-level assertion. A file
 * whose output is broken (crash, killed after a timeout, missing plan, bail out) counts as
 * at least one failure even when none of its points failed.
 */
async function countResults(dir: string): Promise<Counts> {
  const counts: Counts = { passed: 0, failed: 0 };
  for (const file of await listTapFiles(dir)) {
    const text = await readFile(file, 'utf8');
    // A group's top-level points are its files: count the points of each file instead.
    const results = file.includes(`${GROUPS_DIR_NAME}/`) ? await parseGroupTap(text) : [await parseTap(text)];
    for (const final of results) {
      // `failures`: failed points that are not todo/skip, plus TAP structure errors.
      counts.passed += final.pass;
      counts.failed += final.failures.length || (final.ok ? 0 : 1);
    }
  }
  return counts;
}

/** The results of each file of a group (its top-level subtests), and the group's own when it broke down. */
function parseGroupTap(text: string): Promise<FinalResults[]> {
  return new Promise((resolveResults) => {
    const files: FinalResults[] = [];
    const parser = new Parser();
    parser.on('child', (child: Parser) => child.on('complete', (final: FinalResults) => files.push(final)));
    // A group that crashed between files, or whose file points failed outside its subtests.
    parser.on('complete', (final: FinalResults) => {
      const filesFailed = files.some((f) => !f.ok);
      resolveResults(final.ok || filesFailed ? files : [...files, { ...final, pass: 0 }]);
    });
    parser.end(text);
  });
}

async function listTapFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  // A group file's results live under .tap/test-results/.tap/groups/: a folder named `.tap`.
  return entries.filter((e) => e.isFile() && e.name.endsWith('.tap')).map((e) => join(e.parentPath, e.name));
}

function parseTap(text: string): Promise<FinalResults> {
  return new Promise((resolveResults) => {
    const parser = new Parser();
    parser.on('complete', resolveResults);
    parser.end(text);
  });
}

function printSummary({ passed, failed }: Counts): void {
  // CI reads this exact shape from the last line of the output.
  console.log(`${passed} passed, ${failed} failed`);
}

main().then(
  // Always exit explicitly, with the run's code.
  (code) => process.exit(code),
  (err: unknown) => {
    // The harness itself failed (e.g. postgres did not start): still end with the summary.
    console.error(err);
    printSummary({ passed: 0, failed: 1 });
    process.exit(1);
  },
);
