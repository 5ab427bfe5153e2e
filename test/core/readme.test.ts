// The README and docs/ are what a user reads: the plugin table must match the plugin
// manifests, every setting the server reads must be documented, and no link may lead
// outside the repository.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { builtInPlugins } from '../../config/plugins.ts';
import type { PluginDefinition } from '../../core/kernel/plugin.ts';

const root = path.resolve(import.meta.dirname, '../..');
const read = (file: string) => readFileSync(path.join(root, file), 'utf8');
const readme = read('README.md');
const docs = readdirSync(path.join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`);

/** The rows of the first table after `heading`, as cells. */
function tableAfter(markdown: string, heading: string): string[][] {
  const start = markdown.indexOf(`\n${heading}\n`);
  if (start < 0) throw new Error(`no "${heading}" section`);
  const lines = markdown.slice(start).split('\n');
  const first = lines.findIndex((l) => l.startsWith('|'));
  const rows: string[][] = [];
  for (const line of lines.slice(first + 2)) {
    if (!line.startsWith('|')) break;
    rows.push(line.slice(1, -1).split(/(?<!\\)\|/).map((c) => c.trim()));
  }
  return rows;
}

t.test('the README plugin table matches the plugin manifests', async (t) => {
  const manifests = new Map<string, PluginDefinition>();
  for (const [name, specifier] of Object.entries(builtInPlugins)) manifests.set(name, (await import(specifier)).default);
  const rows = tableAfter(readme, '## Plugins');
  const listed = rows.map(([plugin]) => /^\[`([a-z-]+)`\]\(([^)]+)\)$/.exec(plugin));
  t.same(listed.map((m) => m?.[1]).sort(), [...manifests.keys()].sort(), 'one row per built-in plugin');
  for (const [i, [, dependsOn]] of rows.entries()) {
    const [, name, link] = listed[i] ?? [];
    if (!name) continue;
    t.ok(existsSync(path.join(root, link)), `${name} links to ${link}`);
    const documented = dependsOn === '—' ? [] : dependsOn.split(',').map((s) => s.trim());
    t.same(documented.sort(), [...(manifests.get(name)?.dependsOn ?? [])].sort(), `${name} depends on what its manifest says`);
  }
});

t.test('docs/configuration.md documents every setting the server reads', async (t) => {
  const configuration = read('docs/configuration.md');
  const variables = [...new Set(read('app/config.ts').match(/LABDATA_[A-Z_]+/g))];
  t.ok(variables.length >= 10);
  for (const name of variables) t.match(configuration, `\`${name}\``, name);
});

t.test('links stay inside the repository and resolve', async (t) => {
  for (const file of ['README.md', ...docs]) {
    const text = read(file);
    t.notMatch(text, /\.\.\/shared|contract\.md/, `${file} does not send readers outside the repository`);
    for (const [, target] of text.matchAll(/\]\(([^)#\s]+)(#[^)]*)?\)/g)) {
      if (/^[a-z]+:/.test(target)) continue;
      const resolved = path.resolve(root, path.dirname(file), target);
      t.ok(resolved.startsWith(root + path.sep) && existsSync(resolved), `${file} → ${target}`);
    }
  }
  for (const page of ['configuration', 'cli', 'bootstrap', 'operations', 'api', 'plugins']) {
    t.match(readme, `](docs/${page}.md`, `the README links docs/${page}.md`);
  }
});
