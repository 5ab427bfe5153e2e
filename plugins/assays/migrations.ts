import type { MigrationDefinition } from '../../core/public.ts';

export const migrations: MigrationDefinition[] = [
  {
    name: 'assays-0001-init',
    sql: [
      `create table assay (
        id uuid primary key,
        organization_id uuid not null references organization (id) deferrable initially deferred,
        study_id uuid not null references study (id) deferrable initially deferred,
        assay_type_id uuid not null references assay_type (id) deferrable initially deferred,
        name text not null,
        description text,
        status text not null,
        start_date timestamptz,
        field_values jsonb not null default '{}',
        archived boolean not null default false,
        created_by_id uuid not null references organization_user (id) deferrable initially deferred,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now(),
        version integer not null default 1)`,
      `create index assay_org_created_idx on assay (organization_id, created_at desc, id)`,
      `create index assay_study_idx on assay (study_id, created_at desc, id)`,
      `create index assay_type_idx on assay (assay_type_id)`,
    ],
  },
];
