import { searchable } from '../search/extensions.ts';

/** Tasks in search (plugins/search): by label; seen as the project, study or assay they belong to. */
export const taskSearch = searchable('tasks', {
  kind: 'task',
  table: 'task',
  alias: 't',
  fields: [{ sql: 't.label', weight: 'A', names: true }],
  title: 't.label',
  parent: 't.parent_id',
});
