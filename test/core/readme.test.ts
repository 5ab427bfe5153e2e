// The README and docs/ are what a user reads: the README stays a short door (at most 250
// lines) whose plugin table matches the plugin manifests, every setting the server reads and
// every event type the plugins declare is documented in docs/, and every link resolves inside
// the repository, down to the heading an #anchor names.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { builtInPlugins } from '../../config/plugins.ts';
import type { PluginDefinition } from '../../core/kernel/plugin.ts';

const root = path.resolve(import.meta.dirname, '../..');
const read = (file: string) => readFileSync(path.join(root, file), 'utf8');
const readme = read('README.md');
const docs = readdirSync(path.join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`);
const README_MAX_LINES = 250;

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

/**
 * The anchors of a markdown file's headings, as GitHub makes them: the heading's text (inline
 * code and link text kept, markup dropped), lower-cased, every character but letters, digits,
 * spaces, `-` and `_` dropped, spaces made `-`; a repeated anchor gets `-1`, `-2`, ... Headings
 * inside fenced code blocks are not headings.
 */
function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fence: string | undefined;
  for (const line of markdown.split('\n')) {
    const marker = /^ {0,3}(`{3,}|~{3,})/.exec(line)?.[1];
    if (marker && (!fence || (marker[0] === fence[0] && marker.length >= fence.length))) {
      fence = fence ? undefined : marker;
      continue;
    }
    if (fence) continue;
    const heading = /^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const text = heading.replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1');
    const base = text.toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** Every `[text](target)` of a markdown file, fenced code blocks left out. */
function linksOf(markdown: string): string[] {
  const prose = markdown.replace(/^ {0,3}(`{3,}|~{3,})[^\n]*\n[\s\S]*?^ {0,3}\1[^\n]*$/gm, '');
  return [...prose.matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]);
}

t.test('the README is the door: at most 250 lines', async (t) => {
  const lines = readme.split('\n').length - (readme.endsWith('\n') ? 1 : 0);
  t.ok(lines <= README_MAX_LINES, `README.md has ${lines} lines (at most ${README_MAX_LINES}); reference material belongs in docs/`);
});

t.test('the README plugin table matches the plugin manifests', async (t) => {
  const manifests = await loadManifests();
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

async function loadManifests(): Promise<Map<string, PluginDefinition>> {
  const manifests = new Map<string, PluginDefinition>();
  for (const [name, specifier] of Object.entries(builtInPlugins)) manifests.set(name, (await import(specifier)).default);
  return manifests;
}

t.test('docs/activity.md lists every event type the built-in plugins declare, with its category', async (t) => {
  const rows = tableAfter(read('docs/activity.md'), '## Event types');
  const documented = new Map<string, string>();
  for (const [types, category] of rows) for (const [, name] of types.matchAll(/`([a-z_]+\.[a-z_]+)`/g)) documented.set(name, category);
  for (const [plugin, manifest] of await loadManifests()) {
    for (const [eventType, category] of Object.entries(manifest.events ?? {})) {
      // The Study Tracker import's history-only types: docs/import-study-tracker.md names them.
      if (eventType.startsWith('study_tracker.')) continue;
      t.equal(documented.get(eventType), category, `${plugin}: ${eventType} (${category})`);
    }
  }
});

t.test('docs/configuration.md documents every setting the server reads', async (t) => {
  const configuration = read('docs/configuration.md');
  const variables = [...new Set(read('app/config.ts').match(/LABDATA_[A-Z_]+/g))];
  t.ok(variables.length >= 10);
  for (const name of variables) t.match(configuration, `\`${name}\``, name);
});

t.test('links stay inside the repository and resolve, anchors included', async (t) => {
  const anchorsOf = new Map<string, Set<string>>();
  const anchors = (file: string) => anchorsOf.get(file) ?? anchorsOf.set(file, headingAnchors(readFileSync(file, 'utf8'))).get(file)!;
  for (const file of ['README.md', 'CHANGELOG.md', ...docs]) {
    const text = read(file);
    t.notMatch(text, /\.\.\/shared|contract\.md/, `${file} does not send readers outside the repository`);
    for (const link of linksOf(text)) {
      if (/^[a-z]+:/.test(link)) continue;
      const [target, fragment] = link.split('#', 2);
      const resolved = target ? path.resolve(root, path.dirname(file), target) : path.join(root, file);
      if (!(resolved.startsWith(root + path.sep) && existsSync(resolved))) {
        t.fail(`${file} → ${link}: no such file in the repository`);
        continue;
      }
      if (fragment !== undefined && resolved.endsWith('.md')) {
        t.ok(anchors(resolved).has(decodeURIComponent(fragment)), `${file} → ${link}: a heading of ${path.relative(root, resolved)}`);
      } else {
        t.pass(`${file} → ${link}`);
      }
    }
  }
  for (const page of docs) t.match(readme, `](${page}`, `the README links ${page}`);
});

t.test('heading anchors follow GitHub\'s rules', async (t) => {
  const anchors = headingAnchors('# Lab Data Service\n## Making records searchable (`search.sources`)\n## Help, version, exit status\n```sh\n# not a heading\n```\n## Logs\n## Logs\n');
  t.same([...anchors], ['lab-data-service', 'making-records-searchable-searchsources', 'help-version-exit-status', 'logs', 'logs-1']);
});
