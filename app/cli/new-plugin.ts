/**
 * `labdata new-plugin NAME`: starts a resource plugin from `plugins/keywords`, the smallest
 * complete plugin, by copying its folder and renaming its identifiers. The copy is the template
 * itself (no second template folder that could drift from it).
 */
import fs from 'node:fs';
import path from 'node:path';
import pluralize from 'pluralize';
import type { Command } from './args.ts';

const projectRoot = path.resolve(import.meta.dirname, '../..');
const TEMPLATE = path.join(projectRoot, 'plugins/keywords');
/** Kebab-case plural: a new plugin names the resources it holds (`instruments`, `lab-devices`). */
const NAME = /^[a-z][a-z0-9]*(-[a-z][a-z0-9]*)*s$/;

/** A refused name or target folder: one line on stderr, exit 2 (bad input, as every verb's). */
export class NewPluginError extends Error {}

/** The spellings of a resource name that the template's "keyword(s)" take. */
export interface ResourceNames {
  /** `lab-devices`: the plugin name and its migration prefix. */
  plugin: string;
  /** `lab_device` / `lab_devices`: tables, event types, paths and tool names. */
  singular: string;
  plural: string;
  /** `labDevice`: identifiers. */
  camel: string;
  /** `LabDevice` / `LabDevices`: entity names and tags. */
  pascal: string;
  pascalPlural: string;
}

/**
 * The spellings of NAME, or a NewPluginError saying what a name must look like. `singular`
 * (kebab-case, `--singular`) overrides the inflection table where it errs ("caches" → "cach").
 */
export function resourceNames(name: string, singular?: string): ResourceNames {
  if (!NAME.test(name)) {
    throw new NewPluginError(`"${name}" is not a plugin name: use a kebab-case plural such as "instruments" or "lab-devices"`);
  }
  if (singular !== undefined && !/^[a-z][a-z0-9]*(-[a-z][a-z0-9]*)*$/.test(singular)) {
    throw new NewPluginError(`--singular "${singular}" is not a kebab-case name such as "lab-device"`);
  }
  // The last word carries the number ("lab-devices" → "lab-device"); pluralize knows the
  // irregular ones ("analyses" → "analysis", "indices" → "index") a suffix rule gets wrong.
  const plurals = name.split('-');
  const last = plurals.at(-1)!;
  const words = singular?.split('-') ?? [...plurals.slice(0, -1), pluralize.singular(last)];
  if (words.join('-') === name) {
    // One spelling for both would give one table, path and tool name to a record and its list.
    throw new NewPluginError(`"${name}" is the same in the singular: pick a name with a distinct singular, such as "specimens"`);
  }
  const cap = (w: string) => w[0].toUpperCase() + w.slice(1);
  const pascal = words.map(cap).join('');
  return {
    plugin: name,
    singular: words.join('_'),
    plural: name.replaceAll('-', '_'),
    camel: pascal[0].toLowerCase() + pascal.slice(1),
    pascal,
    pascalPlural: name.split('-').map(cap).join(''),
  };
}

/**
 * What a plugin outside this checkout imports instead of a relative path: the package's public
 * entry points (package.json "exports"), resolved through a `node_modules/labdata` above it.
 */
const PACKAGE_IMPORTS: [RegExp, string][] = [
  [/'\.\.\/\.\.\/core\/public\.ts'/g, "'labdata/plugin-api'"],
  [/'\.\.\/\.\.\/lib\/(records|integrations)\/index\.ts'/g, "'labdata/$1'"],
  [/'\.\.\/\.\.\/plugins\/([\w-]+)\/extensions\.ts'/g, "'labdata/plugins/$1'"],
];

/** The template's text with its resource renamed; imports re-aimed from `target`. */
export function renameTemplate(text: string, names: ResourceNames, target: string): string {
  const root = path.relative(target, projectRoot).split(path.sep).join('/');
  // Two levels up is this checkout's root only for a plugin folder inside it.
  const fromRoot = path.relative(projectRoot, target);
  const outside = fromRoot === '..' || fromRoot.startsWith(`..${path.sep}`) || path.isAbsolute(fromRoot);
  const imports = outside
    ? PACKAGE_IMPORTS.reduce((t, [from, to]) => t.replace(from, to), text)
    : text.replace(/'(\.\.\/\.\.\/)/g, `'${root}/`);
  return imports
    // The README's line about being the template would be untrue in the copy.
    .replace('The smallest complete plugin, and the one `labdata new-plugin NAME` copies:', 'Started with `labdata new-plugin`; its files:')
    .replace(/\bkeywords(?=-\d{4}-)|(?<=name: ')keywords(?=')|(?<=^# )keywords$|(?<=plugins\/)keywords\b|\bkeywords plugin\b/gm, (m) =>
      m.replace('keywords', names.plugin),
    )
    .replace(/Keywords/g, names.pascalPlural)
    .replace(/Keyword/g, names.pascal)
    .replace(/keyword(?=[A-Z])/g, names.camel)
    .replace(/keywords/g, names.plural)
    .replace(/keyword/g, names.singular)
    // "a keyword" becomes "an instrument".
    // ("a user", "a unit": a "u" read as "you" keeps "a").
    .replace(/\b([Aa]) (?=[aeio]|u(?!n[iu]|s|t|r|k))/g, (m, article: string, offset: number, all: string) => (startsName(all.slice(offset + 2), names) ? `${article}n ` : m));
}

/** Whether `text` starts with one of the resource's renamed spellings. */
function startsName(text: string, names: ResourceNames): boolean {
  return [names.singular, names.camel, names.plural].some((spelling) => text.startsWith(spelling) && !/[a-z]/i.test(text[spelling.length] ?? ''));
}

/** Copies the template into `<into>/<name>`; refuses a bad name or an existing folder. Returns the folder. */
export function newPlugin(name: string, into = path.join(projectRoot, 'plugins'), singular?: string): string {
  const names = resourceNames(name, singular);
  const target = path.resolve(into, name);
  if (fs.existsSync(target)) throw new NewPluginError(`${path.relative(process.cwd(), target) || target} already exists: choose another name or remove it`);
  if (fs.existsSync(path.join(projectRoot, 'plugins', name))) throw new NewPluginError(`"${name}" is the name of a built-in plugin: choose another name`);
  const owner = tableOwners().get(names.singular);
  if (owner) throw new NewPluginError(`"${name}" would create the table ${names.singular}, which ${owner} already has: choose another name`);
  fs.mkdirSync(target, { recursive: true });
  for (const file of fs.readdirSync(TEMPLATE)) {
    const text = fs.readFileSync(path.join(TEMPLATE, file), 'utf8');
    fs.writeFileSync(path.join(target, file), renameTemplate(text, names, target));
  }
  return target;
}

/** Tables the kernel and the built-in plugins create, by who creates them (read from their migrations). */
function tableOwners(): Map<string, string> {
  const owners = new Map<string, string>();
  const scan = (file: string, owner: string) => {
    for (const [, table] of fs.readFileSync(file, 'utf8').matchAll(/create table (?:if not exists )?(\w+)/g)) owners.set(table, owner);
  };
  for (const file of fs.readdirSync(path.join(projectRoot, 'core'), { recursive: true, encoding: 'utf8' })) {
    if (file.endsWith('.ts')) scan(path.join(projectRoot, 'core', file), 'the kernel');
  }
  for (const plugin of fs.readdirSync(path.join(projectRoot, 'plugins'))) {
    const file = path.join(projectRoot, 'plugins', plugin, 'migrations.ts');
    if (fs.existsSync(file)) scan(file, `the ${plugin} plugin`);
  }
  return owners;
}

/** The CLI verb (listed in app/cli/cli.ts). */
export const newPluginCommand: Command = {
  name: 'new-plugin',
  usage: 'new-plugin NAME [--into DIR] [--singular WORD]',
  summary: 'Start a resource plugin in plugins/NAME from plugins/keywords.',
  description:
    'Copies plugins/keywords (manifest, schemas, service, entities, migrations, events, README) into plugins/NAME and renames ' +
    'keyword/keywords to the new resource: NAME is a kebab-case plural ("instruments" gives the table instrument, the routes ' +
    '/instruments and the tools list_instruments and get_instrument). Then edit the files in the new folder and add the plugin ' +
    'to LABDATA_PLUGINS (a path such as ./plugins/instruments) or to config/plugins.ts. A bad name or an existing folder exits 2.',
  args: [{ name: 'NAME', description: 'the plugin name, a kebab-case plural (instruments, lab-devices)' }],
  options: {
    into: { type: 'string', value: 'DIR', description: 'the folder that receives NAME (default: the plugins folder)' },
    singular: { type: 'string', value: 'WORD', description: 'the singular, where the inflection table gets it wrong (caches: --singular cache)' },
  },
  examples: ['labdata new-plugin instruments', 'labdata new-plugin lab-devices --into plugins-extra', 'labdata new-plugin caches --singular cache'],
  async run(values, [name], io) {
    try {
      const singular = typeof values.singular === 'string' ? values.singular : undefined;
      const target = newPlugin(name, typeof values.into === 'string' ? path.resolve(values.into) : undefined, singular);
      // Relative to the working directory when inside it, else absolute (never "../../tmp/...").
      const relative = path.relative(process.cwd(), target);
      io.stdout.write(JSON.stringify({ plugin: name, folder: relative.startsWith('..') ? target : relative }) + '\n');
    } catch (err) {
      if (!(err instanceof NewPluginError)) throw err;
      io.stderr.write(`labdata: new-plugin: ${err.message}\n`);
      return 2;
    }
  },
};
