/** Built-in plugins, by name, enabled when LABDATA_PLUGINS is not set (in this order). */
const builtIn = (path: string) => new URL(path, import.meta.url).href;

export const builtInPlugins: Record<string, string> = {
  users: builtIn('../plugins/users/index.ts'),
  projects: builtIn('../plugins/projects/index.ts'),
  studies: builtIn('../plugins/studies/index.ts'),
};
