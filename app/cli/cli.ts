import fs from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { ConfigError, loadConfig } from '../config.ts';
import type { Runtime, RuntimeOptions } from '../runtime.ts';
import { AdminError } from './errors.ts';
import { UsageError, commandHelp, listHelp, parseCommand, wantsHelp, type CliIo, type Command } from './args.ts';
import { progressReporter } from './progress.ts';
import { newPluginCommand } from './new-plugin.ts';

// The runtime, the server and the admin services are imported when a command runs, so that
// `--help`, `--version` and usage errors answer at once, whatever the environment, and never
// reach a database.

const VERSION: string = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version;

const DATABASE_NOTE =
  'Uses the same settings as the server (LABDATA_DATABASE_URL, or the embedded database under LABDATA_DATA_DIR) and works whether or not the server is running.';

function print(io: CliIo, value: unknown) {
  io.stdout.write(JSON.stringify(value, null, 2) + '\n');
}

/** `jobs: 'queue'` for commands that migrate or may queue jobs (pg-boss); the others skip it. */
async function withRuntime<T>(io: CliIo, fn: (runtime: Runtime) => Promise<T>, options: RuntimeOptions = { jobs: 'off' }): Promise<T> {
  const { openRuntime } = await import('../runtime.ts');
  const config = loadConfig(io.env);
  let runtime: Runtime | undefined;
  const unhook = config.databaseUrl ? () => {} : await letGoOnSignal(() => runtime);
  try {
    runtime = await openRuntime(config, undefined, options);
    try {
      return await fn(runtime);
    } finally {
      await runtime.close();
    }
  } finally {
    unhook();
  }
}

/** Longest a command stopped by a signal spends letting go of the embedded database. */
const LET_GO_MS = 10_000;

/**
 * A command on the embedded database, stopped by a signal (Ctrl-C, a service manager), still
 * closes its runtime and lets go of the cluster (stopping it when it is the last one using it,
 * app/db/embedded.ts), from the first moment: the default action would leave a cluster it
 * started running. A signal repeated meanwhile counts once (the terminal and npm both deliver
 * Ctrl-C). Returns what removes the handlers.
 */
async function letGoOnSignal(runtime: () => Runtime | undefined): Promise<() => void> {
  const { letGoOfEmbeddedDatabase } = await import('../db/embedded.ts');
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    const exit = () => process.exit(signal === 'SIGINT' ? 130 : 143);
    setTimeout(exit, LET_GO_MS).unref();
    const open = runtime();
    void (open ? open.close() : letGoOfEmbeddedDatabase()).catch(() => undefined).finally(exit);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return () => {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  };
}

/** Digits only (`--days 7`): `0x7`, `7.0` or ` 7` stay text, which the command then refuses. */
const wholeNumber = (text: string): number | string => (/^[0-9]+$/.test(text) ? Number(text) : text);

const keyId = (value: string) => value.replace(/^key_/, '').split('.')[0];

const COMMANDS: Command[] = [
  {
    name: 'serve',
    usage: 'serve',
    summary: 'Run the service over HTTPS (same as npm start).',
    description:
      'Applies pending migrations, then serves until SIGINT/SIGTERM. Prints "listening on https://HOST:PORT" when ready. Settings come from the environment (LABDATA_HOST, LABDATA_PORT, LABDATA_DATABASE_URL, ...; see docs/configuration.md).',
    examples: ['labdata serve', 'LABDATA_PORT=9443 LABDATA_DATABASE_URL=postgres://labdata@db/labdata labdata serve'],
    async run(_values, _positionals, io) {
      const { serve } = await import('../server.ts');
      await serve(loadConfig(io.env));
    },
  },
  {
    name: 'migrate',
    usage: 'migrate',
    summary: 'Apply pending database migrations (kernel, plugins and the job queue) and exit.',
    description: `Prints {"migrations": "up to date", "applied": [...], "plugins": [...]}. Progress goes to stderr. ${DATABASE_NOTE}`,
    examples: ['labdata migrate', 'LABDATA_DATABASE_URL=postgres://labdata@db/labdata labdata migrate'],
    async run(_values, _positionals, io) {
      const progress = progressReporter('migrate', io.stderr);
      const applied: string[] = [];
      const report = (step: string, done: number, total: number) => {
        if (done < total) applied.push(step);
        progress.report(step, done, total);
      };
      await withRuntime(
        io,
        async (rt) => {
          progress.end();
          print(io, { migrations: 'up to date', applied, plugins: rt.kernel.plugins.map((p) => p.name) });
        },
        { jobs: 'queue', progress: report },
      );
    },
  },
  {
    name: 'bootstrap',
    usage: 'bootstrap FILE',
    summary: 'Provision the organizations, users, teams, API keys and plugin records FILE describes.',
    description: `FILE is JSON (format: docs/bootstrap.md). All or nothing: a bad item changes nothing. Prints the created ids and key secrets by ref; progress (one step per section) goes to stderr. ${DATABASE_NOTE}`,
    args: [{ name: 'FILE', description: 'the bootstrap JSON file' }],
    examples: ['labdata bootstrap test/fixtures/bootstrap/acme.json', 'labdata bootstrap acme.json > created.json'],
    async run(_values, [file], io) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(await fs.readFile(file, 'utf8'));
      } catch (e) {
        throw new AdminError(`bootstrap: cannot read ${file}: ${(e as Error).message.split('\n')[0]}`);
      }
      const { applyBootstrap } = await import('./bootstrap.ts');
      const progress = progressReporter('bootstrap', io.stderr);
      await withRuntime(
        io,
        async (rt) => {
          const created = await applyBootstrap(rt.orm.em.fork(), parsed, rt.kernel, progress.report).finally(() => progress.end());
          print(io, created);
        },
        { jobs: 'queue' },
      );
    },
  },
  {
    name: 'keys create',
    usage: 'keys create --user USER_ID --organization ORG_ID --name NAME --days 7|30|90|365',
    summary: 'Create an API key for a member of an organization; prints {"id", "key"} (the key is shown once).',
    options: {
      user: { type: 'string', value: 'USER_ID', description: 'the user (UUID)', required: true },
      organization: { type: 'string', value: 'ORG_ID', description: 'the organization the key acts in (UUID); the user must be a member', required: true },
      name: { type: 'string', value: 'NAME', description: 'a display name, at most 64 characters', required: true },
      days: { type: 'string', value: 'DAYS', description: 'validity: 7, 30, 90 or 365', required: true },
    },
    examples: ['labdata keys create --user 6f0c3c1e-… --organization 2b7e9a40-… --name laptop --days 30'],
    async run(values, _positionals, io) {
      const [userId, organizationId, name] = [values.user, values.organization, values.name] as string[];
      const { isUuid, issueKey } = await import('./admin.ts');
      if (!isUuid(userId) || !isUuid(organizationId)) throw new AdminError('keys create: --user and --organization must be UUIDs');
      await withRuntime(io, async (rt) => {
        const em = rt.orm.em.fork();
        print(io, await em.transactional((tx) => issueKey(tx, { userId, organizationId, name, days: wholeNumber(values.days as string) }, rt.config.enterprise)));
      });
    },
  },
  {
    name: 'keys list',
    usage: 'keys list --user USER_ID',
    summary: "List a user's API keys: metadata only (id, name, organization, createdAt, lastUsedAt, expiresAt, revokedAt).",
    options: { user: { type: 'string', value: 'USER_ID', description: 'the user (UUID)', required: true } },
    examples: ['labdata keys list --user 6f0c3c1e-…'],
    async run(values, _positionals, io) {
      const userId = values.user as string;
      const { isUuid, listKeys } = await import('./admin.ts');
      if (!isUuid(userId)) throw new AdminError('keys list: --user must be a UUID');
      await withRuntime(io, async (rt) => print(io, await listKeys(rt.orm.em.fork(), userId)));
    },
  },
  {
    name: 'keys revoke',
    usage: 'keys revoke KEY_ID',
    summary: 'Revoke an API key; it gets 401 from then on. Prints {"id", "revokedAt"}; revoking twice keeps the first time.',
    args: [{ name: 'KEY_ID', description: 'the <keyId> of key_<keyId>.<secret> (the full key is accepted too)' }],
    examples: ['labdata keys revoke 0c4q2m7x9f3k8d1b5n6p'],
    async run(_values, [id], io) {
      const { revokeKey } = await import('./admin.ts');
      await withRuntime(io, async (rt) => print(io, await revokeKey(rt.orm.em.fork(), keyId(id))));
    },
  },
  {
    name: 'roles set',
    usage: 'roles set ORGANIZATION_USER_ID ROLE[,ROLE...]',
    summary: "Replace an organization user's roles; every key of that user follows on its next request.",
    args: [
      { name: 'ORGANIZATION_USER_ID', description: 'the membership (organization user) id, a UUID' },
      { name: 'ROLE[,ROLE...]', description: 'ORGANIZATION_USER and/or ORGANIZATION_ADMIN, comma-separated' },
    ],
    examples: ['labdata roles set 9d2f…-… ORGANIZATION_ADMIN,ORGANIZATION_USER', 'labdata roles set 9d2f…-… ORGANIZATION_USER'],
    async run(_values, [organizationUserId, roles], io) {
      const { setRoles } = await import('./admin.ts');
      await withRuntime(io, async (rt) => print(io, await setRoles(rt.orm.em.fork(), organizationUserId, roles.split(',').map((r) => r.trim()))));
    },
  },
  {
    name: 'recount',
    usage: 'recount',
    summary: 'Rebuild the derived counters (page totals) from the rows.',
    description: `Needed after rows arrive without the database triggers (a restore, a bulk load with triggers disabled). Safe while the service runs: it counts in one snapshot and corrects the counters by the difference, so writers and readers never wait for it. Idempotent. Prints {"statements", "passes", "corrected" (counter rows that were off: 0 when nothing needed it), "repaired" (loaded rows whose copy of a value the counters read was brought up to date, e.g. a grant's project visibility), "durationMs"}; progress goes to stderr. ${DATABASE_NOTE}`,
    examples: ['labdata recount', 'LABDATA_DATABASE_URL=postgres://labdata@db/labdata labdata recount'],
    async run(_values, _positionals, io) {
      const progress = progressReporter('recount', io.stderr);
      const { recount } = await import('../db/recount.ts');
      await withRuntime(io, async (rt) => {
        const started = performance.now();
        const { statements, passes, corrected, repaired } = await recount(rt.kernel.services.counters, rt.orm.em.fork(), progress.report).finally(() => progress.end());
        print(io, { statements, passes, corrected, repaired, durationMs: Math.round(performance.now() - started) });
      });
    },
  },
  {
    name: 'import',
    usage: 'import SOURCE PATH --organization ORG_ID [--dry-run] [--visibility V]',
    summary: "Move another system's export into an organization, whole or not at all; run it again after more work there.",
    description: `SOURCE names an importer an enabled plugin offers: study-tracker (a Study Tracker data export; docs/import-study-tracker.md). Reads and checks the whole export first, then writes it in one transaction; a second run of the same export creates nothing, a later one creates the new records and updates the changed ones. Prints {"created": {kind: n}, "updated": {...}, "unchanged": {...}, "warnings": [{file, line, message}]}; progress goes to stderr. Input it cannot import exits 2 with "labdata: FILE:LINE: reason", and nothing is written. ${DATABASE_NOTE}`,
    args: [
      { name: 'SOURCE', description: 'the system the export comes from (study-tracker)' },
      { name: 'PATH', description: 'the export: its folder, or a .zip of it' },
    ],
    options: {
      organization: { type: 'string', value: 'ORG_ID', description: 'the organization the records move into (UUID)', required: true },
      'dry-run': { type: 'boolean', description: 'read and check everything and report what it would do; write nothing' },
      visibility: { type: 'string', value: 'V', description: 'visibility of the projects it creates: PUBLIC (default), PROTECTED or PRIVATE' },
    },
    examples: [
      'labdata import study-tracker ./data-export-2024-05-01.zip --organization 2b7e9a40-… --dry-run',
      'labdata import study-tracker ./data-export/ --organization 2b7e9a40-… --visibility PROTECTED',
    ],
    async run(values, [source, path], io) {
      const organizationId = values.organization as string;
      const { isUuid } = await import('./admin.ts');
      if (!isUuid(organizationId)) throw new AdminError('import: --organization must be a UUID');
      const progress = progressReporter('import', io.stderr);
      await withRuntime(io, async (rt) => {
        const importers = rt.kernel.plugins.flatMap((p) => Object.entries(p.importers ?? {}));
        const importer = importers.find(([name]) => name === source)?.[1];
        if (!importer) throw new AdminError(`import: unknown source "${source}" (known: ${importers.map(([name]) => name).join(', ') || 'none: no enabled plugin imports'})`);
        const em = rt.orm.em.fork();
        const [org] = await em.execute('select id from organization where id = ?', [organizationId.toLowerCase()]);
        if (!org) throw new AdminError(`import: unknown organization ${organizationId}`);
        const options = { dryRun: values['dry-run'] === true, visibility: values.visibility as string | undefined };
        const report = await importer
          .run({ em, services: rt.kernel.services, path, organizationId: organizationId.toLowerCase(), options, progress: progress.report })
          .finally(() => progress.end());
        print(io, report);
      });
    },
  },
  // Needs no database: it only writes files (app/cli/new-plugin.ts).
  newPluginCommand,
];

const GROUPS = ['keys', 'roles'];
const VERBS = [...new Set(COMMANDS.map((c) => c.name.split(' ')[0]))];

const TOP_HELP = listHelp(
  'usage: labdata <command> [options]\n\nThe Lab Data Service and its admin commands. JSON on stdout, logs and progress on stderr; exit 2 on a usage error.',
  COMMANDS,
  [
    '',
    'options:',
    '  -h, --help     show help (also: labdata help <command>, labdata <command> --help)',
    '  --version      print the version',
    '',
    'examples:',
    '  labdata serve',
    '  labdata bootstrap acme.json',
    '  labdata keys create --help',
  ],
);

function groupHelp(group: string): string {
  return listHelp(`usage: labdata ${group} <action> [options]`, COMMANDS.filter((c) => c.name.startsWith(group + ' ')), ['', `See labdata ${group} <action> --help.`]);
}

/** The command `argv` names and the arguments left for it; throws the one-line reason otherwise. */
function resolve(argv: string[], help: boolean): { command?: Command; group?: string; rest: string[] } {
  const [verb, ...rest] = argv;
  if (GROUPS.includes(verb)) {
    const [action, ...args] = rest;
    const command = COMMANDS.find((c) => c.name === `${verb} ${action}`);
    if (command) return { command, rest: args };
    if (help && (action === undefined || action.startsWith('-'))) return { group: verb, rest };
    const actions = COMMANDS.filter((c) => c.name.startsWith(verb + ' ')).map((c) => c.name.split(' ')[1]);
    throw new UsageError(action === undefined ? `${verb}: an action is required (${actions.join(', ')})` : `unknown ${verb} action "${action}" (${actions.join(', ')})`);
  }
  const command = COMMANDS.find((c) => c.name === verb);
  if (command) return { command, rest };
  if (verb.startsWith('-')) throw new UsageError(`unknown option "${verb}" (see labdata --help)`);
  throw new UsageError(`unknown verb "${verb}" (verbs: ${VERBS.join(', ')}; see labdata --help)`);
}

/** Runs one CLI invocation; resolves to its exit code (2: usage or operator error, 1: unexpected). */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  try {
    return await dispatch(argv, io);
  } catch (e) {
    const err = e as Error;
    const operator = [UsageError, AdminError, ConfigError].some((type) => err instanceof type);
    // (The database's errors module is loaded only for other errors: a usage error answers at once.)
    if (!operator && (await import('../../core/db/errors.ts')).sqlStateOf(err) === '23505') {
      // Another process created the same record between this one's check and its insert (one
      // transaction: nothing was written): the check's own answer, a moment late.
      io.stderr.write('labdata: a record this command creates was created at the same moment by another process; nothing was changed (run it again to see which)\n');
      return 2;
    }
    const known = operator || err instanceof (await import('../../core/kernel/loader.ts')).PluginLoadError;
    // A database or embedded cluster that cannot be used: said as the server says it, exit 1 as its.
    const environment = err instanceof (await import('../startup.ts')).StartupError;
    io.stderr.write(`labdata: ${known || environment ? err.message : `unexpected error: ${err.message.split('\n')[0]}`}\n`);
    return known ? 2 : 1;
  }
}

async function dispatch(argv: string[], io: CliIo): Promise<number> {
  const [first, ...rest] = argv;
  if (first === undefined) {
    io.stderr.write(TOP_HELP);
    return 2;
  }
  if (first === '--version') {
    if (rest.length) throw new UsageError('--version takes no arguments');
    io.stdout.write(VERSION + '\n');
    return 0;
  }
  if (first === 'help' || first === '--help' || first === '-h') {
    if (rest.length === 0) {
      io.stdout.write(TOP_HELP);
      return 0;
    }
    const target = resolve(rest, true);
    io.stdout.write(target.command ? commandHelp(target.command) : groupHelp(target.group!));
    return 0;
  }
  const help = wantsHelp(argv);
  const { command, group, rest: args } = resolve(argv, help);
  if (help) {
    io.stdout.write(command ? commandHelp(command) : groupHelp(group!));
    return 0;
  }
  const { values, positionals } = parseCommand(command!, args);
  return (await command!.run(values, positionals, io)) ?? 0;
}
