import t from 'tap';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

// The part of the plugin boundary the linter cannot say (eslint.config.js says the rest): a
// plugin imports another plugin's entry point (extensions.ts) only when its manifest names
// that plugin in `dependsOn`, so the loader orders and enables them together.
const root = path.resolve(import.meta.dirname, '../..');
const pluginsDir = path.join(root, 'plugins');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => path.join(e.parentPath, e.name));
}

/** Other plugins whose extensions.ts a file imports (relative path or `labdata/plugins/NAME`). */
function importedPlugins(file: string, self: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specs = [...text.matchAll(/(?:from|import\()\s*'([^']+)'/g)].map((m) => m[1]);
  const names = specs.flatMap((spec) => {
    const pkg = /^labdata\/plugins\/([^/]+)$/.exec(spec);
    if (pkg) return [pkg[1]];
    if (!spec.startsWith('.')) return [];
    const rel = path.relative(pluginsDir, path.resolve(path.dirname(file), spec)).split(path.sep);
    return rel.length === 2 && rel[1] === 'extensions.ts' ? [rel[0]] : [];
  });
  return names.filter((n) => n !== self);
}

/**
 * Optional dependencies: the plugin extends the other one only when it is enabled, through
 * `ctx.find(point)`, and calls its helpers only from that extension.
 */
const OPTIONAL: Record<string, string[]> = {
  tasks: ['assays', 'assay-types'],
  collaborators: ['studies'],
};

t.test("a plugin imports another plugin's extensions.ts only if it is in its dependsOn", async (t) => {
  const folders = readdirSync(pluginsDir, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name);
  const dependsOn = new Map<string, string[]>();
  for (const folder of folders) {
    const manifest = (await import(pathToFileURL(path.join(pluginsDir, folder, 'index.ts')).href)).default as { name: string; dependsOn?: string[] };
    dependsOn.set(folder, manifest.dependsOn ?? []);
  }
  // What the loader guarantees to be enabled alongside: dependsOn, and theirs in turn.
  const needs = (name: string, seen = new Set<string>()): Set<string> => {
    for (const dep of dependsOn.get(name) ?? []) if (!seen.has(dep)) needs(dep, seen.add(dep));
    return seen;
  };
  for (const folder of folders) {
    const allowed = new Set([...needs(folder), ...(OPTIONAL[folder] ?? [])]);
    const undeclared = sources(path.join(pluginsDir, folder)).flatMap((file) =>
      importedPlugins(file, folder)
        .filter((name) => !allowed.has(name))
        .map((name) => `${path.relative(root, file)} imports plugins/${name}/extensions.ts: add "${name}" to dependsOn of ${folder}`),
    );
    t.same(undeclared, [], folder);
  }
});

// The record library serves every record kind from what plugins declare (issue 13): a kind's
// name in it, even in a comment, is a sign that a plugin's knowledge leaked into the library.
t.test('the record library names no record kind', async (t) => {
  const named = sources(path.join(root, 'lib/records')).flatMap((file) =>
    readFileSync(file, 'utf8')
      .split('\n')
      .flatMap((line, i) => (/project|stud(y|ies)|assay/i.test(line) ? [`${path.relative(root, file)}:${i + 1}: ${line.trim()}`] : [])),
  );
  t.same(named, []);
});
