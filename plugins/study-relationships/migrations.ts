import type { db } from '../../core/public.ts';

export const migrations: db.MigrationDefinition[] = [
  {
    name: 'study-relationships-0001-init',
    sql: [
      `create table study_relationship (
        id uuid primary key,
        organization_id uuid not null references organization (id) deferrable initially deferred,
        source_study_id uuid not null references study (id) deferrable initially deferred,
        target_study_id uuid not null references study (id) deferrable initially deferred,
        type text not null check (type in ('IS_RELATED_TO', 'IS_PARENT_OF', 'IS_CHILD_OF', 'IS_BLOCKING',
          'IS_BLOCKED_BY', 'IS_PRECEDED_BY', 'IS_SUCCEEDED_BY')),
        created_by_id uuid not null references organization_user (id) deferrable initially deferred,
        created_at timestamptz not null default now(),
        check (source_study_id <> target_study_id))`,
      // The same relationship twice is a 409, also under concurrency: the inverse row is unique
      // too, so two requests creating a pair from either end cannot both commit.
      `create unique index study_relationship_key on study_relationship (source_study_id, type, target_study_id)`,
      // Default order of a study's list; the target index serves the delete cascade.
      `create index study_relationship_source_idx on study_relationship (source_study_id, created_at desc, id)`,
      `create index study_relationship_target_idx on study_relationship (target_study_id)`,
    ],
  },
  {
    name: 'study-relationships-0002-activity-references',
    // Relationship entries name the target study (kernel-0007): shown only to who may view it.
    sql: [
      `update activity set ref_kind = 'study', ref_id = (data->>'targetStudyId')::uuid
        where event_type in ('study_relationship.created', 'study_relationship.deleted') and ref_kind is null`,
    ],
  },
];
