import type { db } from '../../core/public.ts';

export const migrations: db.MigrationDefinition[] = [
  {
    name: 'storage-0001-init',
    sql: [
      `create table storage_drive (
        id uuid primary key,
        organization_id uuid not null references organization (id) deferrable initially deferred,
        name text not null,
        kind text not null check (kind in ('LOCAL', 'S3')),
        settings jsonb not null,
        credentials text,
        is_default boolean not null default false,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now())`,
      // At most one default drive per organization: also what makes creating the embedded
      // default on first use safe under concurrency (insert ... on conflict do nothing).
      `create unique index storage_drive_org_default_idx on storage_drive (organization_id) where is_default`,
      `create index storage_drive_org_name_idx on storage_drive (organization_id, name, id)`,
      // parent_kind/parent_id name a project, study or assay (the kernel's parent registry): no
      // foreign key to one table; the parents' delete hooks remove the rows.
      `create table storage_folder (
        id uuid primary key,
        organization_id uuid not null references organization (id) deferrable initially deferred,
        parent_kind text not null,
        parent_id uuid not null,
        drive_id uuid not null references storage_drive (id) deferrable initially deferred,
        path text not null,
        name text not null,
        is_primary boolean not null default false,
        created_by_id uuid not null references organization_user (id) deferrable initially deferred,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now())`,
      // Exactly one primary per record is kept by the service; this makes a second one impossible.
      `create unique index storage_folder_primary_idx on storage_folder (parent_kind, parent_id) where is_primary`,
      // One folder is attached to a record once (a second attach is a 409).
      `create unique index storage_folder_unique_idx on storage_folder (parent_kind, parent_id, drive_id, path)`,
      // A record's list in its default order (primary first, then oldest first), and the cascade.
      `create index storage_folder_parent_idx on storage_folder (parent_kind, parent_id, is_primary desc, created_at, id)`,
      `create index storage_folder_drive_idx on storage_folder (drive_id)`,
      `create table shared_storage_folder (
        id uuid primary key,
        organization_id uuid not null references organization (id) deferrable initially deferred,
        drive_id uuid not null references storage_drive (id) deferrable initially deferred,
        path text not null,
        name text not null,
        description text,
        created_at timestamptz not null default now())`,
      `create unique index shared_storage_folder_drive_path_idx on shared_storage_folder (drive_id, path)`,
      `create index shared_storage_folder_org_name_idx on shared_storage_folder (organization_id, name, id)`,
    ],
  },
  {
    // A new folder's path is looked up on its drive (no attachment may have it yet): by index,
    // whatever the drive holds. The (drive_id) index is its prefix.
    name: 'storage-0002-folder-drive-path',
    sql: [
      `create index storage_folder_drive_path_idx on storage_folder (drive_id, path)`,
      `drop index storage_folder_drive_idx`,
    ],
  },
];
