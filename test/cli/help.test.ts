// The CLI answers help, version and usage mistakes by itself (issue 12, point 6): nothing
// starts, nothing migrates, no database is reached, whatever the environment says.
import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { randomBytes } from 'node:crypto';
import { projectRoot, runCli, runCliInProcess } from './labdata-cli.ts';

// A database nobody listens on and a data dir that must stay absent: touching either would show.
const dataDir = join(tmpdir(), `labdata-help-${randomBytes(6).toString('hex')}`);
const env = { LABDATA_DATABASE_URL: 'postgres://nobody@127.0.0.1:9/none', LABDATA_DATA_DIR: dataDir, LABDATA_PORT: '0' };
const cli = (args: string[], extra: Record<string, string> = {}) => runCli(args, { ...env, ...extra });
// The per-verb answers are the CLI's code run in this process; the top level runs the launcher.
const inProcess = (args: string[], extra: Record<string, string> = {}) => runCliInProcess(args, { ...env, ...extra });
const version = JSON.parse(readFileSync(join(projectRoot, 'package.json'), 'utf8')).version;

const COMMANDS = ['serve', 'migrate', 'bootstrap', 'keys create', 'keys list', 'keys revoke', 'roles set', 'recount', 'import'];

t.test('the top level answers --help, -h and help with the verbs', async (t) => {
  const spellings = [['--help'], ['-h'], ['help']];
  const results = await Promise.all(spellings.map((args) => cli(args)));
  for (const [i, args] of spellings.entries()) {
    const res = results[i];
    t.equal(res.code, 0, `${args[0]}: exit 0`);
    t.match(res.stdout, /^usage: labdata <command>/);
    for (const name of COMMANDS) t.match(res.stdout, `\n  ${name}`, `${args[0]} lists ${name}`);
    t.match(res.stdout, /examples:/);
    t.equal(res.stderr, '');
  }
  const bare = await cli([]);
  t.equal(bare.code, 2, 'no verb at all: usage on stderr, exit 2');
  t.match(bare.stderr, /^usage: labdata <command>/);
});

t.test('--version prints the package version', async (t) => {
  const res = await cli(['--version']);
  t.equal(res.code, 0);
  t.equal(res.stdout, `${version}\n`);
});

t.test('every verb answers --help (usage, options, examples) without side effects', async (t) => {
  // Each verb one way, the three spellings rotating over them.
  const runs = COMMANDS.map((name, i) => {
    const words = name.split(' ');
    const args = [[...words, '--help'], [...words, '-h'], ['help', ...words]][i % 3];
    return { name, args, res: inProcess(args) };
  });
  for (const { name, args, res: pending } of runs) {
    {
      const res = await pending;
      t.equal(res.code, 0, `${args.join(' ')}: exit 0 (${res.stderr})`);
      t.match(res.stdout, new RegExp(`^usage: labdata ${name}`), `${args.join(' ')}: usage`);
      t.match(res.stdout, /\noptions:\n[\s\S]* {2}-h, --help/, `${args.join(' ')}: options`);
      t.match(res.stdout, new RegExp(`\\nexamples:\\n {2}(\\S+=\\S+ )*labdata ${name}`), `${args.join(' ')}: examples`);
      t.equal(res.stderr, '', 'nothing logged: nothing started');
    }
  }
  // Help wins over whatever else the line holds, required options missing included.
  const create = await inProcess(['keys', 'create', '--name', 'x', '--help']);
  t.equal(create.code, 0);
  t.match(create.stdout, /--user USER_ID/);
  t.match(create.stdout, /--days DAYS +validity: 7, 30, 90 or 365/);
  const group = await inProcess(['keys', '--help']);
  t.equal(group.code, 0);
  t.match(group.stdout, /keys create[\s\S]*keys list[\s\S]*keys revoke/);
  // A broken setting does not stand between an operator and the help text.
  t.equal((await cli(['serve', '--help'], { LABDATA_PORT: 'not-a-port' })).code, 0);
  t.notOk(existsSync(dataDir), 'the data dir was never created (no embedded database started)');
});

t.test('unknown verbs, actions and options exit 2 with one line', async (t) => {
  const cases: [string[], RegExp][] = [
    [['frobnicate'], /^labdata: unknown verb "frobnicate"/],
    [['--frobnicate'], /^labdata: unknown option "--frobnicate"/],
    [['help', 'frobnicate'], /^labdata: unknown verb "frobnicate"/],
    [['serve', '--port', '1'], /^labdata: serve: unknown option "--port"/],
    [['migrate', '-x'], /^labdata: migrate: unknown option "-x"/],
    [['recount', 'now'], /^labdata: recount: unexpected argument "now"/],
    [['keys', 'rotate'], /^labdata: unknown keys action "rotate" \(create, list, revoke\)/],
    [['keys'], /^labdata: keys: an action is required/],
    [['keys', 'list', '--user'], /^labdata: keys list: option "--user" needs a value/],
    [['keys', 'create', '--user', 'u', '--organization', 'o', '--name', 'n', '--days', '7', '--color', 'red'], /^labdata: keys create: unknown option "--color"/],
    [['bootstrap', 'a.json', 'b.json'], /^labdata: bootstrap: unexpected argument "b.json"/],
    // parseArgs would keep the last: the arguments are parsed strictly (README "Admin CLI").
    [['keys', 'create', '--user', 'u', '--organization', 'o', '--name', 'n', '--days', '7', '--days', '30'], /^labdata: keys create: --days is given more than once/],
    [['--version', 'x'], /^labdata: --version takes no arguments/],
  ];
  const results = await Promise.all(cases.map(([args]) => inProcess(args)));
  for (const [i, [args, reason]] of cases.entries()) {
    const res = results[i];
    t.equal(res.code, 2, `${args.join(' ')}: exit 2`);
    t.equal(res.stdout, '', 'nothing on stdout');
    t.equal(res.stderr.split('\n').filter(Boolean).length, 1, `${args.join(' ')}: one line`);
    t.match(res.stderr, reason);
  }
  t.notOk(existsSync(dataDir), 'still no data dir');
});
