import { builtInPlugins } from '../config/plugins.ts';
import { loadPlugins } from '../core/kernel/loader.ts';
import type { PluginDefinition } from '../core/kernel/plugin.ts';

/** The deployment's plugins: LABDATA_PLUGINS if set, else every built-in of config/plugins.ts, ordered. */
export function loadDeploymentPlugins(specs: string[] | undefined): Promise<PluginDefinition[]> {
  return loadPlugins(specs, builtInPlugins);
}
