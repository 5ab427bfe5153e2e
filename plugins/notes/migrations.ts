import type { db } from '../../core/public.ts';
import { noteSearch } from './search.ts';

export const migrations: db.MigrationDefinition[] = [
  {
    name: 'notes-0001-init',
    sql: [
      // parent_kind/parent_id name the organization or a project, study or assay (the kernel's
      // parent registry), so there is no foreign key to one table: the parents' delete hooks
      // remove the rows (and their versions, through the cascade below).
      `create table note (
        id uuid primary key,
        organization_id uuid not null references organization (id) deferrable initially deferred,
        parent_kind text not null,
        parent_id uuid not null,
        type text not null check (type in ('NOTE', 'COMMENT', 'CONCLUSION', 'TEMPLATE')),
        format text not null check (format in ('TIPTAP', 'MARKDOWN', 'TEXT', 'QUILL')),
        archived boolean not null default false,
        created_by_id uuid references organization_user (id) deferrable initially deferred,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now(),
        current_version integer not null default 1)`,
      // A parent's list in its default order (organization notes: parent_id is the organization),
      // and the delete cascade by parent.
      `create index note_parent_idx on note (parent_kind, parent_id, created_at desc, id)`,
      `create table note_version (
        note_id uuid not null references note (id) on delete cascade deferrable initially deferred,
        version integer not null,
        organization_id uuid not null references organization (id) deferrable initially deferred,
        content text not null,
        created_by_id uuid references organization_user (id) deferrable initially deferred,
        created_at timestamptz not null default now(),
        primary key (note_id, version))`,
    ],
  },
  {
    name: 'notes-0002-live-count',
    sql: [
      // A list's total counts the parent's live notes from this index alone (no table, no versions).
      `create index note_live_idx on note (parent_kind, parent_id, organization_id) where not archived`,
    ],
  },
  {
    name: 'notes-0003-text',
    sql: [
      // The words of a note's content, whatever its format: TIPTAP and QUILL store JSON documents,
      // whose text is in their "text" nodes and string "insert"s (their keys and node types are
      // not words); content that is not the JSON its format says is read as it is. For search.
      `create function labdata_note_text(format text, content text) returns text language plpgsql immutable as $$
       begin
         if format = 'TIPTAP' then
           begin
             return coalesce((select string_agg(t #>> '{}', ' ')
               from jsonb_path_query(content::jsonb, 'strict $.**.text ? (@.type() == "string")') t), '');
           exception when others then return content;
           end;
         elsif format = 'QUILL' then
           begin
             return coalesce((select string_agg(t #>> '{}', '')
               from jsonb_path_query(content::jsonb, 'strict $.ops[*].insert ? (@.type() == "string")') t), '');
           exception when others then return content;
           end;
         end if;
         return content;
       end $$`,
    ],
  },
  // Searchable (plugins/search): always the last migration, it reads the table as the others leave it.
  noteSearch.migration,
];
