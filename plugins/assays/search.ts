import { searchable } from '../search/extensions.ts';

/** Assays in search (plugins/search): by code, name and description; seen as their study is. */
export const assaySearch = searchable('assays', {
  kind: 'assay',
  table: 'assay',
  alias: 'a',
  fields: [{ sql: 'a.name', weight: 'A', names: true }, { sql: 'a.description', weight: 'B' }],
  code: 'a.code',
  title: 'a.name',
  parent: 'a.study_id',
  archived: 'a.archived',
});
