import type { db } from '../../core/public.ts';

export const migrations: db.MigrationDefinition[] = [
  {
    name: 'study-tracker-0001-map',
    sql: [
      // What each Study Tracker record became here, per organization: a later run of the same
      // or a newer export finds it (the key), and knows from the fingerprint of what it wrote
      // whether the record changed since. `source_id` is text: a few tables have no id of
      // their own (a study's git repository is the pair of ids).
      `create table study_tracker_map (
        organization_id uuid not null references organization (id) deferrable initially deferred,
        kind text not null,
        source_id text not null,
        target_id uuid not null,
        fingerprint text,
        imported_at timestamptz not null default now(),
        primary key (organization_id, kind, source_id))`,
    ],
  },
];
