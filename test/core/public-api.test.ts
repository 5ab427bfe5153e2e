import t from 'tap';
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import path from 'node:path';

// The kernel's entry point stays small enough to read: each name used by a plugin or a library,
// each export documented, and at most 40 names; related names are grouped in namespaces
// (`errors.NotFoundError`, `db.query`), each member used and documented too. Type names are
// invisible at run time, so the files' export lists are parsed.
const root = path.resolve(import.meta.dirname, '../..');
const source = readFileSync(path.join(root, 'core/public.ts'), 'utf8');
const MAX_NAMES = 40;

const statements = [...source.matchAll(/^export (?:type )?\{([^}]*)\} from '([^']+)';/gms)];
const listed = (list: string) => list.split(',').map((n) => n.trim().replace(/^type /, '').split(/\s+as\s+/).pop()!).filter(Boolean);
/** `export * as errors from './api/errors.ts'`: one name, its members listed in that module. */
const namespaces = [...source.matchAll(/^export \* as (\w+) from '([^']+)';/gm)].map(([, name, file]) => ({
  name,
  members: [...readFileSync(path.join(root, 'core', file), 'utf8').matchAll(/^export (?:type )?\{([^}]*)\} from '[^']+';/gm)].flatMap(([, list]) => listed(list)),
}));
const names = [...statements.flatMap(([, list]) => listed(list)), ...namespaces.map((n) => n.name)];

/** Files of the plugins, libraries and fixtures that import the entry point. */
function consumers(): string[] {
  const files: string[] = [];
  const walk = (dir: string): void => {
    if (!existsSync(dir)) return;
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.name.endsWith('.ts')) files.push(full);
    }
  };
  for (const dir of ['plugins', 'lib', 'test/fixtures/plugins']) walk(path.join(root, dir));
  return files;
}

t.test('every name of core/public.ts is used by some plugin or library', async (t) => {
  const text = consumers().map((f) => readFileSync(f, 'utf8')).join('\n');
  const unused = names.filter((n) => !new RegExp(`\\b${n}\\b`).test(text));
  t.same(unused, [], 'unused names: drop them from core/public.ts');
  const unusedMembers = namespaces.flatMap(({ name, members }) => members.filter((m) => !new RegExp(`\\b${name}\\.${m}\\b`).test(text)).map((m) => `${name}.${m}`));
  t.same(unusedMembers, [], 'unused namespace members: drop them from core/api/');
  t.same(names.filter((n, i) => names.indexOf(n) !== i), [], 'no name exported twice');
});

t.test('every export of core/public.ts and of its namespaces has a one-line TSDoc comment', async (t) => {
  for (const file of ['public.ts', ...[...source.matchAll(/^export \* as \w+ from '\.\/([^']+)';/gm)].map((m) => m[1])]) {
    const lines = readFileSync(path.join(root, 'core', file), 'utf8').split('\n');
    const undocumented = lines.filter((line, i) => line.startsWith('export ') && !/^\/\*\*.*\*\/$/.test(lines[i - 1] ?? ''));
    t.same(undocumented, [], file);
  }
});

t.test(`core/public.ts exports at most ${MAX_NAMES} names`, async (t) => {
  t.ok(names.length <= MAX_NAMES, `${names.length} names (a name added needs another one merged or dropped)`);
});
