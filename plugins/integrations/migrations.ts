import type { db } from '../../core/public.ts';

/** No entities.ts: the plugin reads and writes these tables with SQL only (no MikroORM entity to keep in step). */
export const migrations: db.MigrationDefinition[] = [
  {
    name: 'integrations-0001-init',
    sql: [
      // Credentials are sealed text (core/secrets.ts: AES-256-GCM), never plain JSON.
      `create table integration (
        id uuid primary key,
        organization_id uuid not null references organization (id) deferrable initially deferred,
        type text not null,
        name text not null,
        settings jsonb not null default '{}',
        credentials text,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now())`,
      // The default order (name) and the type look-ups of other plugins.
      `create index integration_org_name_idx on integration (organization_id, name, id)`,
      `create table personal_integration (
        id uuid primary key,
        organization_id uuid not null references organization (id) deferrable initially deferred,
        user_id uuid not null references app_user (id) deferrable initially deferred,
        type text not null,
        name text not null,
        settings jsonb not null default '{}',
        credentials text,
        status text not null check (status in ('ACTIVE', 'ARCHIVED')),
        archived_at timestamptz,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now())`,
      // The caller's connections: always (organization, user), active ones, newest first by default.
      `create index personal_integration_owner_idx on personal_integration (organization_id, user_id, status, created_at desc, id)`,
    ],
  },
];
