import { searchable } from '../search/extensions.ts';

/** Studies in search (plugins/search): by code, name and description; seen as their project is. */
export const studySearch = searchable('studies', {
  kind: 'study',
  table: 'study',
  alias: 's',
  fields: [{ sql: 's.name', weight: 'A', names: true }, { sql: 's.description', weight: 'B' }],
  code: 's.code',
  title: 's.name',
  parent: 's.project_id',
  archived: 's.archived',
});
