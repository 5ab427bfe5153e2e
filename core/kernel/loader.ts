import type { PluginDefinition } from './plugin.ts';

/** A start-up problem with the plugin list; its message is the one line the operator sees. */
export class PluginLoadError extends Error {}

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
