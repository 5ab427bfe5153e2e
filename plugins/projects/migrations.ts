import type { MigrationDefinition } from '../../core/public.ts';

export const migrations: MigrationDefinition[] = [
  {
    name: 'projects-0001-init',
    sql: [
      `create table project (
        id uuid primary key,
        organization_id uuid not null references organization (id) deferrable initially deferred,
        code text not null,
        name text not null,
        description text not null,
        visibility text not null check (visibility in ('PUBLIC', 'PROTECTED', 'PRIVATE')),
        status text not null,
        archived boolean not null default false,
        created_by_id uuid not null references organization_user (id) deferrable initially deferred,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now(),
        version integer not null default 1)`,
      // Default order and the visibility filter (organization first, then visibility).
      `create index project_org_created_idx on project (organization_id, created_at desc, id)`,
      `create index project_org_visibility_idx on project (organization_id, visibility)`,
    ],
  },
];
