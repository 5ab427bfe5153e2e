import { searchable } from '../search/extensions.ts';

/** Projects in search (plugins/search): by code, name and description; they decide their records' visibility. */
export const projectSearch = searchable('projects', {
  kind: 'project',
  table: 'project',
  alias: 'p',
  fields: [{ sql: 'p.name', weight: 'A', names: true }, { sql: 'p.description', weight: 'B' }],
  code: 'p.code',
  title: 'p.name',
  visibility: 'p.visibility',
  archived: 'p.archived',
});
