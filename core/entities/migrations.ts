import type { MigrationDefinition } from '../db/orm.ts';

// Foreign keys are checked at commit (deferred): the ORM may insert a transaction's rows in any order.
export const kernelMigrations: MigrationDefinition[] = [
  {
    name: 'kernel-0001-init',
    sql: [
      `create table organization (
        id uuid primary key,
        name text not null,
        created_at timestamptz not null default now())`,
      `create table app_user (
        id uuid primary key,
        email text not null,
        display_name text not null,
        created_at timestamptz not null default now())`,
      `create unique index app_user_email_key on app_user (lower(email))`,
      `create table organization_user (
        id uuid primary key,
        organization_id uuid not null references organization (id) deferrable initially deferred,
        user_id uuid not null references app_user (id) deferrable initially deferred,
        roles text[] not null,
        status text not null,
        created_at timestamptz not null default now(),
        version integer not null default 1,
        unique (organization_id, user_id))`,
      `create index organization_user_user_idx on organization_user (user_id)`,
      // The key id is the primary key: authentication is one index lookup.
      `create table api_key (
        id text primary key,
        secret_hash bytea not null,
        name text not null,
        user_id uuid not null references app_user (id) deferrable initially deferred,
        organization_id uuid not null references organization (id) deferrable initially deferred,
        organization_user_id uuid not null references organization_user (id) deferrable initially deferred,
        created_at timestamptz not null default now(),
        expires_at timestamptz not null,
        revoked_at timestamptz,
        last_used_at timestamptz)`,
      `create index api_key_user_idx on api_key (user_id)`,
      `create table team (
        id uuid primary key,
        organization_id uuid not null references organization (id) deferrable initially deferred,
        name text not null,
        description text,
        active boolean not null default true,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now(),
        version integer not null default 1)`,
      `create index team_org_idx on team (organization_id, name)`,
      `create table team_member (
        team_id uuid not null references team (id) on delete cascade deferrable initially deferred,
        organization_user_id uuid not null references organization_user (id) on delete cascade deferrable initially deferred,
        primary key (team_id, organization_user_id))`,
      `create index team_member_user_idx on team_member (organization_user_id)`,
      `create table project_member (
        id uuid primary key,
        organization_id uuid not null references organization (id) deferrable initially deferred,
        project_id uuid not null,
        organization_user_id uuid references organization_user (id) on delete cascade deferrable initially deferred,
        team_id uuid references team (id) on delete cascade deferrable initially deferred,
        created_at timestamptz not null default now(),
        check (num_nonnulls(organization_user_id, team_id) = 1))`,
      `create unique index project_member_user_key on project_member (project_id, organization_user_id) where organization_user_id is not null`,
      `create unique index project_member_team_key on project_member (project_id, team_id) where team_id is not null`,
      `create index project_member_user_idx on project_member (organization_user_id, project_id)`,
      `create index project_member_team_idx on project_member (team_id, project_id)`,
      `create table activity (
        id uuid primary key,
        organization_id uuid not null references organization (id) deferrable initially deferred,
        event_type text not null,
        category text not null,
        data jsonb not null,
        date timestamptz not null,
        project_id uuid,
        study_id uuid,
        assay_id uuid,
        organization_user_id uuid not null references organization_user (id) deferrable initially deferred)`,
      // Newest-first feeds per organization and per record.
      `create index activity_org_date_idx on activity (organization_id, date desc, id desc)`,
      `create index activity_project_date_idx on activity (project_id, date desc, id desc) where project_id is not null`,
      `create index activity_study_date_idx on activity (study_id, date desc, id desc) where study_id is not null`,
      `create index activity_assay_date_idx on activity (assay_id, date desc, id desc) where assay_id is not null`,
      `create index activity_actor_date_idx on activity (organization_user_id, date desc, id desc)`,
    ],
  },
  {
    name: 'kernel-0002-activity-visibility-index',
    sql: [
      // Counting a caller's feed reads only this index: the columns the visibility filter uses.
      `create index activity_org_visibility_idx on activity (organization_id, project_id, category, organization_user_id)`,
    ],
  },
  {
    name: 'kernel-0003-provisioning',
    sql: [
      // One row per external step of a record's provisioning (core/provisioning): the job queue
      // runs it; the row keeps its status and result, so a rerun never repeats finished work.
      `create table provisioning_step (
        id uuid primary key,
        organization_id uuid not null references organization (id) deferrable initially deferred,
        record_kind text not null,
        record_id uuid not null,
        plugin text not null,
        step text not null,
        payload jsonb not null,
        status text not null check (status in ('PENDING', 'RUNNING', 'DONE', 'FAILED')),
        result jsonb,
        attempts integer not null default 0,
        last_error text,
        created_by_id uuid not null references organization_user (id) deferrable initially deferred,
        user_id uuid not null,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now(),
        completed_at timestamptz)`,
      `create index provisioning_step_record_idx on provisioning_step (record_kind, record_id)`,
    ],
  },
];
