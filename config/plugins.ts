/** Built-in plugins, by name, enabled when LABDATA_PLUGINS is not set (in this order). */
const builtIn = (path: string) => new URL(path, import.meta.url).href;

export const builtInPlugins: Record<string, string> = {
  users: builtIn('../plugins/users/index.ts'),
  integrations: builtIn('../plugins/integrations/index.ts'),
  teams: builtIn('../plugins/teams/index.ts'),
  projects: builtIn('../plugins/projects/index.ts'),
  studies: builtIn('../plugins/studies/index.ts'),
  'assay-types': builtIn('../plugins/assay-types/index.ts'),
  assays: builtIn('../plugins/assays/index.ts'),
  storage: builtIn('../plugins/storage/index.ts'),
  tasks: builtIn('../plugins/tasks/index.ts'),
  'study-collections': builtIn('../plugins/study-collections/index.ts'),
  'study-relationships': builtIn('../plugins/study-relationships/index.ts'),
  'project-access': builtIn('../plugins/project-access/index.ts'),
  activity: builtIn('../plugins/activity/index.ts'),
  keywords: builtIn('../plugins/keywords/index.ts'),
  collaborators: builtIn('../plugins/collaborators/index.ts'),
  notes: builtIn('../plugins/notes/index.ts'),
  'external-links': builtIn('../plugins/external-links/index.ts'),
  'eln-a': builtIn('../plugins/eln-a/index.ts'),
  'eln-b': builtIn('../plugins/eln-b/index.ts'),
  git: builtIn('../plugins/git/index.ts'),
  'study-tracker': builtIn('../plugins/study-tracker/index.ts'),
  webhooks: builtIn('../plugins/webhooks/index.ts'),
  search: builtIn('../plugins/search/index.ts'),
};
