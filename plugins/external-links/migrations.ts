import type { db } from '../../core/public.ts';
import { externalLinkSearch } from './search.ts';

export const migrations: db.MigrationDefinition[] = [
  {
    name: 'external-links-0001-init',
    sql: [
      // parent_kind/parent_id name a project, study or assay (the kernel's parent registry), so
      // there is no foreign key to one table: the parents' delete hooks remove the rows.
      `create table external_link (
        id uuid primary key,
        organization_id uuid not null references organization (id) deferrable initially deferred,
        parent_kind text not null,
        parent_id uuid not null,
        label text not null,
        url text not null,
        created_by_id uuid not null references organization_user (id) deferrable initially deferred,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now(),
        version integer not null default 1)`,
      // A parent's list in its default order, and the delete cascade by parent (a parent id
      // belongs to one organization, so the organization filter needs no column here).
      `create index external_link_parent_idx on external_link (parent_kind, parent_id, created_at desc, id)`,
    ],
  },
  // Searchable (plugins/search): always the last migration, it reads the table as the others leave it.
  externalLinkSearch.migration,
];
