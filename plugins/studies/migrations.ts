import type { MigrationDefinition } from '../../core/public.ts';

export const migrations: MigrationDefinition[] = [
  {
    name: 'studies-0001-init',
    sql: [
      `create table study (
        id uuid primary key,
        organization_id uuid not null references organization (id) deferrable initially deferred,
        project_id uuid not null references project (id) deferrable initially deferred,
        name text not null,
        description text,
        status text not null,
        start_date timestamptz,
        archived boolean not null default false,
        created_by_id uuid not null references organization_user (id) deferrable initially deferred,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now(),
        version integer not null default 1)`,
      `create index study_org_created_idx on study (organization_id, created_at desc, id)`,
      `create index study_project_idx on study (project_id, created_at desc, id)`,
    ],
  },
];
