import t from 'tap';
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import path from 'node:path';

// The kernel's entry point stays small enough to read: each name used by a plugin or a library,
// each export documented, and no more names than today (a ratchet: issue 13 aims at 40; lower
// MAX_NAMES as names leave). Type names are invisible at run time, so the file's
// export list is parsed.
const root = path.resolve(import.meta.dirname, '../..');
const source = readFileSync(path.join(root, 'core/public.ts'), 'utf8');
const MAX_NAMES = 80;

const statements = [...source.matchAll(/^export (?:type )?\{([^}]*)\} from '([^']+)';/gms)];
const names = statements.flatMap(([, list]) =>
  list.split(',').map((n) => n.trim().replace(/^type /, '').split(/\s+as\s+/).pop()!).filter(Boolean),
);

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
  t.same(names.filter((n, i) => names.indexOf(n) !== i), [], 'no name exported twice');
});

t.test('every export of core/public.ts has a one-line TSDoc comment', async (t) => {
  const lines = source.split('\n');
  const undocumented = lines.filter((line, i) => line.startsWith('export ') && !/^\/\*\*.*\*\/$/.test(lines[i - 1] ?? ''));
  t.same(undocumented, []);
});

t.test(`core/public.ts exports at most ${MAX_NAMES} names`, async (t) => {
  t.ok(names.length <= MAX_NAMES, `${names.length} names (a name added needs another one merged or dropped)`);
});
