import { searchable } from '../search/extensions.ts';

const text = 'labdata_note_text(n.format, v.content)';

/**
 * Notes in search (plugins/search): by the text of their current version (labdata_note_text,
 * migration notes-0003, reads the words out of TIPTAP and QUILL documents); archived notes are
 * never found. A note of the organization is seen by its every member, the others as their record.
 */
export const noteSearch = searchable('notes', {
  kind: 'note',
  table: 'note',
  alias: 'n',
  joins: 'join note_version v on v.note_id = n.id and v.version = n.current_version',
  where: 'not n.archived',
  // A new version (an edit of the content) is a row of note_version.
  watch: [{ table: 'note_version', key: 'note_id' }],
  fields: [{ sql: text, weight: 'C' }],
  title: `left(regexp_replace(split_part(btrim(${text}), E'\\n', 1), '^#+\\s*', ''), 120)`,
  parent: `case when n.parent_kind = 'organization' then null else n.parent_id end`,
  visibility: `case when n.parent_kind = 'organization' then 'ORGANIZATION' end`,
});
