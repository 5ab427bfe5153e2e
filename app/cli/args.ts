import { parseArgs } from 'node:util';

/** A malformed command line (unknown verb or option, missing argument): one line, exit 2. */
export class UsageError extends Error {}

export interface OptionSpec {
  type: 'string' | 'boolean';
  short?: string;
  /** The placeholder shown in help (`USER_ID`). */
  value?: string;
  description: string;
  required?: boolean;
}

export interface ArgumentSpec {
  name: string;
  description: string;
  optional?: boolean;
}

export type OptionValues = Record<string, string | boolean | undefined>;

/** One verb (`serve`) or verb and action (`keys create`) of the CLI. */
export interface Command {
  name: string;
  /** The synopsis after `labdata ` (also quoted in "is required" messages). */
  usage: string;
  summary: string;
  description?: string;
  args?: ArgumentSpec[];
  options?: Record<string, OptionSpec>;
  examples: string[];
  /** Resolves to the exit code when it is not 0 (a failure that is not an error thrown). */
  run(values: OptionValues, positionals: string[], io: CliIo): Promise<number | void>;
}

/** Where a CLI run reads its settings and writes its output: the process's, or a test's. */
export interface CliIo {
  env: NodeJS.ProcessEnv;
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown; isTTY?: boolean; columns?: number };
}

const HELP_OPTION: OptionSpec = { type: 'boolean', short: 'h', description: 'show this help and exit' };

/** `-h`/`--help` anywhere before a `--` end-of-options marker. */
export function wantsHelp(args: string[]): boolean {
  const end = args.indexOf('--');
  return (end === -1 ? args : args.slice(0, end)).some((a) => a === '-h' || a === '--help');
}

function table(rows: [string, string][]): string[] {
  const width = Math.max(...rows.map(([left]) => left.length)) + 2;
  return rows.map(([left, right]) => `  ${left.padEnd(width)}${right}`);
}

export function commandHelp(cmd: Command): string {
  const lines = [`usage: labdata ${cmd.usage}`, '', cmd.summary];
  if (cmd.description) lines.push('', cmd.description);
  if (cmd.args?.length) lines.push('', 'arguments:', ...table(cmd.args.map((a) => [a.name, a.description])));
  const options = Object.entries({ ...cmd.options, help: HELP_OPTION });
  lines.push(
    '',
    'options:',
    ...table(options.map(([name, o]) => [`${o.short ? `-${o.short}, ` : ''}--${name}${o.value ? ` ${o.value}` : ''}`, o.description + (o.required ? ' (required)' : '')])),
  );
  lines.push('', 'examples:', ...cmd.examples.map((e) => `  ${e}`));
  return lines.join('\n') + '\n';
}

/** The verbs of a group (`keys`) or of the whole CLI, one per line with its summary. */
export function listHelp(title: string, commands: Command[], footer: string[] = []): string {
  const lines = [title, '', 'commands:', ...table(commands.map((c) => [c.usage.split(' --')[0], c.summary])), ...footer];
  return lines.join('\n') + '\n';
}

/**
 * Parses a command's arguments strictly: an unknown option, a missing value, a missing
 * required option or argument, or an extra argument is a UsageError naming it.
 */
export function parseCommand(cmd: Command, args: string[]): { values: OptionValues; positionals: string[] } {
  const options: Record<string, { type: 'string' | 'boolean'; short?: string }> = {};
  for (const [name, o] of Object.entries(cmd.options ?? {})) options[name] = { type: o.type, ...(o.short ? { short: o.short } : {}) };
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args, options, allowPositionals: true, strict: true, tokens: true });
  } catch (err) {
    const { code, message } = err as { code?: string; message: string };
    const option = /'(-[^']*)'/.exec(message)?.[1];
    if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && option) {
      throw new UsageError(`${cmd.name}: unknown option "${option.split(' ')[0]}" (see labdata ${cmd.name} --help)`);
    }
    if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE' && option) {
      throw new UsageError(`${cmd.name}: option "${option.split(' ')[0]}" needs a value (see labdata ${cmd.name} --help)`);
    }
    throw new UsageError(`${cmd.name}: ${message.split('\n')[0]}`);
  }
  // parseArgs keeps the last of a repeated option: `--days 7 --days 30` is a mistake to name.
  const given = new Set<string>();
  for (const token of parsed.tokens ?? []) {
    if (token.kind !== 'option') continue;
    if (given.has(token.name)) throw new UsageError(`${cmd.name}: --${token.name} is given more than once`);
    given.add(token.name);
  }
  const values = parsed.values as OptionValues;
  for (const [name, o] of Object.entries(cmd.options ?? {})) {
    if (o.required && (values[name] === undefined || values[name] === '')) throw new UsageError(`${cmd.name}: --${name} is required`);
  }
  const specs = cmd.args ?? [];
  const { positionals } = parsed;
  for (const [i, spec] of specs.entries()) {
    if (!spec.optional && positionals[i] === undefined) throw new UsageError(`${cmd.name}: ${spec.name} is required (usage: ${cmd.usage})`);
  }
  if (positionals.length > specs.length) throw new UsageError(`${cmd.name}: unexpected argument "${positionals[specs.length]}" (usage: ${cmd.usage})`);
  return { values, positionals };
}
