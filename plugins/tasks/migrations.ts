import type { db } from '../../core/public.ts';

export const migrations: db.MigrationDefinition[] = [
  {
    name: 'tasks-0001-init',
    sql: [
      `create table task (
        id uuid primary key,
        organization_id uuid not null references organization (id) deferrable initially deferred,
        parent_kind text not null,
        parent_id uuid not null,
        label text not null,
        status text not null check (status in ('TODO', 'IN_PROGRESS', 'COMPLETE', 'INCOMPLETE')),
        due_date timestamptz,
        assigned_to_id uuid references organization_user (id) deferrable initially deferred,
        position integer not null default 0,
        completed_at timestamptz,
        completed_by_id uuid references organization_user (id) deferrable initially deferred,
        created_by_id uuid not null references organization_user (id) deferrable initially deferred,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now(),
        version integer not null default 1)`,
      // Lists by parent in their default order, and look-ups of one user's tasks.
      `create index task_parent_idx on task (parent_kind, parent_id, position, created_at, id)`,
      `create index task_assignee_idx on task (assigned_to_id) where assigned_to_id is not null`,
    ],
  },
  {
    name: 'tasks-0002-fields-and-data',
    // A task's form (fields, from its assay type's standard task) and what was filled in (data).
    sql: [`alter table task add column fields jsonb not null default '[]', add column data jsonb not null default '{}'`],
  },
];
