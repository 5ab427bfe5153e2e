import type { db } from '../../core/public.ts';

/** No entities.ts: the plugin reads and writes these tables with SQL only (no MikroORM entity to keep in step). */
export const migrations: db.MigrationDefinition[] = [
  {
    name: 'git-0001-init',
    sql: [
      // A project's default Git group. No foreign key to the integration: the integration may be
      // disconnected later, and then the stored default is simply ignored (spec).
      `create table git_project_default (
        project_id uuid primary key references project (id) deferrable initially deferred,
        organization_id uuid not null references organization (id) deferrable initially deferred,
        integration_id uuid not null,
        group_id text not null,
        updated_at timestamptz not null default now())`,
      `create index git_project_default_org_idx on git_project_default (organization_id)`,
      // The repository made for a study or an assay: at most one per record.
      `create table git_repository (
        id uuid primary key,
        organization_id uuid not null references organization (id) deferrable initially deferred,
        parent_kind text not null,
        parent_id uuid not null,
        integration_id uuid not null,
        group_id text not null,
        name text not null,
        external_id text not null,
        url text not null,
        created_by_id uuid not null references organization_user (id) deferrable initially deferred,
        created_at timestamptz not null default now(),
        constraint git_repository_parent_key unique (parent_kind, parent_id))`,
      `create index git_repository_org_idx on git_repository (organization_id)`,
    ],
  },
];
