import type { db } from '../../core/public.ts';

export const migrations: db.MigrationDefinition[] = [
  {
    name: 'collaborators-0001-init',
    sql: [
      `create table collaborator (
        id uuid primary key,
        organization_id uuid not null references organization (id) deferrable initially deferred,
        label text not null,
        organization_name text,
        organization_location text,
        contact_person_name text,
        contact_email text,
        code text,
        active boolean not null default true,
        created_by_id uuid not null references organization_user (id) deferrable initially deferred,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now(),
        version integer not null default 1)`,
      // Tenant scope plus the default order (label, asc; id breaks ties).
      `create index collaborator_org_label_idx on collaborator (organization_id, label, id)`,
    ],
  },
  {
    name: 'collaborators-0002-study-collaborator',
    sql: [
      // A study's collaborator (studies' collaboratorId). No foreign key to study: the studies
      // plugin may be off; its delete hook removes the row. Deleting the collaborator clears it.
      `create table study_collaborator (
        study_id uuid primary key,
        organization_id uuid not null references organization (id) deferrable initially deferred,
        collaborator_id uuid not null references collaborator (id) on delete cascade deferrable initially deferred)`,
      `create index study_collaborator_collaborator_idx on study_collaborator (collaborator_id)`,
    ],
  },
];
