import { searchable } from '../search/extensions.ts';

/** External links in search (plugins/search): by label; seen as the record they are attached to. */
export const externalLinkSearch = searchable('external-links', {
  kind: 'external_link',
  table: 'external_link',
  alias: 'l',
  fields: [{ sql: 'l.label', weight: 'A', names: true }],
  title: 'l.label',
  parent: 'l.parent_id',
});
