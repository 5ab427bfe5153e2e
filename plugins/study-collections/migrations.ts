import type { db } from '../../core/public.ts';

export const migrations: db.MigrationDefinition[] = [
  {
    name: 'study-collections-0001-init',
    sql: [
      `create table study_collection (
        id uuid primary key,
        organization_id uuid not null references organization (id) deferrable initially deferred,
        name text not null,
        description text,
        visibility text not null check (visibility in ('PUBLIC', 'PROTECTED', 'PRIVATE')),
        created_by_id uuid not null references organization_user (id) deferrable initially deferred,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now(),
        version integer not null default 1)`,
      // Default order, and the visibility filter (shared ones, or the caller's own).
      `create index study_collection_org_created_idx on study_collection (organization_id, created_at desc, id)`,
      `create index study_collection_org_visibility_idx on study_collection (organization_id, visibility)`,
      `create index study_collection_owner_idx on study_collection (created_by_id)`,
      `create table study_collection_study (
        collection_id uuid not null references study_collection (id) deferrable initially deferred,
        study_id uuid not null references study (id) deferrable initially deferred,
        organization_id uuid not null references organization (id) deferrable initially deferred,
        added_by_id uuid not null references organization_user (id) deferrable initially deferred,
        added_at timestamptz not null default now(),
        primary key (collection_id, study_id))`,
      // Deleting a study removes its memberships.
      `create index study_collection_study_study_idx on study_collection_study (study_id)`,
    ],
  },
  {
    name: 'study-collections-0002-activity-references',
    // Membership entries name the collection (kernel-0007): shown only to who may view it.
    sql: [
      `update activity set ref_kind = 'study_collection', ref_id = (data->>'collectionId')::uuid
        where event_type in ('study_collection.study_added', 'study_collection.study_removed') and ref_kind is null`,
    ],
  },
];
