import { statSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { builtInPlugins } from '../config/plugins.ts';
import { PluginLoadError } from '../core/kernel/loader.ts';
import type { PluginDefinition } from '../core/kernel/plugin.ts';

/** The deployment's plugins: LABDATA_PLUGINS if set, else every built-in of config/plugins.ts, ordered. */
export function loadDeploymentPlugins(specs: string[] | undefined): Promise<PluginDefinition[]> {
  return loadPlugins(specs, builtInPlugins);
}

function isPlugin(value: unknown): value is PluginDefinition {
  const v = value as PluginDefinition | undefined;
  return !!v && typeof v.name === 'string' && typeof v.version === 'string';
}

const INDEX_FILES = ['index.ts', 'index.js', 'index.mjs'];

/**
 * A file or folder on disk, relative to the working directory: `./x`, `/abs/x`, or any name
 * that exists there (`plugins-extra/color.ts`). A folder stands for its index file, so a
 * third-party plugin can be named by its folder. Anything else is a package specifier.
 */
function localModule(spec: string): string | undefined {
  const explicit = spec.startsWith('.') || path.isAbsolute(spec);
  const full = path.resolve(spec);
  const stats = statSync(full, { throwIfNoEntry: false });
  if (!stats) return explicit ? pathToFileURL(full).href : undefined;
  if (!stats.isDirectory()) return pathToFileURL(full).href;
  const index = INDEX_FILES.map((name) => path.join(full, name)).find((file) => statSync(file, { throwIfNoEntry: false })?.isFile());
  if (!index) throw new PluginLoadError(`plugin "${spec}" is a folder without ${INDEX_FILES.join(', ')}`);
  return pathToFileURL(index).href;
}

/** Plugin name to module specifier: the deployment's built-in plugins, handed in by the entry point (config/plugins.ts). */
export type PluginCatalog = Readonly<Record<string, string>>;

async function importPlugin(spec: string, builtIns: PluginCatalog): Promise<PluginDefinition> {
  const target = (Object.hasOwn(builtIns, spec) ? builtIns[spec] : undefined) ?? localModule(spec) ?? spec;
  let mod: Record<string, unknown>;
  try {
    mod = await import(target);
  } catch (e) {
    throw new PluginLoadError(`plugin "${spec}" could not be loaded: ${(e as Error).message.split('\n')[0]}`);
  }
  const def = mod.default ?? mod.plugin;
  if (!isPlugin(def)) throw new PluginLoadError(`module "${spec}" does not export a plugin definition`);
  return def;
}

/**
 * Loads a plugin list (names of built-ins or module specifiers), ordered; no list means every
 * built-in. The kernel knows no plugin: the built-ins come from config/ (loadDeploymentPlugins).
 */
export async function loadPlugins(specs: string[] | undefined, builtIns: PluginCatalog): Promise<PluginDefinition[]> {
  const list = specs ?? Object.keys(builtIns);
  const loaded = await Promise.all(list.map((spec) => importPlugin(spec, builtIns)));
  return orderPlugins(loaded);
}

/** Orders plugins so every plugin comes after its dependencies; names both ends of any problem. */
export function orderPlugins(plugins: PluginDefinition[]): PluginDefinition[] {
  const byName = new Map<string, PluginDefinition>();
  for (const p of plugins) {
    if (byName.has(p.name)) throw new PluginLoadError(`plugin "${p.name}" is listed twice`);
    byName.set(p.name, p);
  }
  for (const p of plugins) {
    for (const dep of p.dependsOn ?? []) {
      if (!byName.has(dep)) throw new PluginLoadError(`plugin "${p.name}" needs "${dep}", which is not enabled`);
    }
  }
  const ordered: PluginDefinition[] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (p: PluginDefinition, trail: string[]): void => {
    if (state.get(p.name) === 'done') return;
    if (state.get(p.name) === 'visiting') {
      const loop = [...trail.slice(trail.indexOf(p.name)), p.name];
      throw new PluginLoadError(`plugin dependency cycle: ${loop.join(' -> ')}`);
    }
    state.set(p.name, 'visiting');
    for (const dep of p.dependsOn ?? []) visit(byName.get(dep)!, [...trail, p.name]);
    state.set(p.name, 'done');
    ordered.push(p);
  };
  for (const p of plugins) visit(p, []);
  return ordered;
}
