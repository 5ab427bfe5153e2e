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
    name: 'kernel-0005-counters',
    sql: [
      // Exact page totals without counting rows (core/counters): per organization x kind x
      // visibility class x category (x acting user for activity), and per parent record.
      // Rows are sharded by backend so concurrent writers do not queue on one hot row; a total
      // is the sum over shards. Maintained by triggers in the writing transaction; rebuilt by
      // `labdata recount`.
      `create table visibility_count (
        organization_id uuid not null,
        kind text not null,
        class text not null,
        category text not null default '',
        actor_id uuid not null default '00000000-0000-0000-0000-000000000000',
        shard smallint not null default 0,
        n bigint not null,
        primary key (organization_id, kind, category, class, actor_id, shard))`,
      `create table record_count (
        record_id uuid not null,
        kind text not null,
        category text not null default '',
        shard smallint not null default 0,
        n bigint not null,
        primary key (record_id, kind, category, shard))`,
      `create function labdata_count(org uuid, k text, cls text, cat text, actor uuid, delta bigint) returns void
       language sql as $$
         insert into visibility_count as c (organization_id, kind, class, category, actor_id, shard, n)
         select org, k, cls, cat, actor, pg_backend_pid() % 8, delta where delta <> 0
         on conflict (organization_id, kind, category, class, actor_id, shard) do update set n = c.n + excluded.n
       $$`,
      `create function labdata_count_record(rid uuid, k text, cat text, delta bigint) returns void
       language sql as $$
         insert into record_count as c (record_id, kind, category, shard, n)
         select rid, k, cat, pg_backend_pid() % 8, delta where delta <> 0 and rid is not null
         on conflict (record_id, kind, category, shard) do update set n = c.n + excluded.n
       $$`,
      `create function labdata_record_total(rid uuid, k text) returns bigint
       language sql stable as $$ select coalesce(sum(n), 0)::bigint from record_count where record_id = rid and kind = k $$`,
      // The visibility class of a project's children and activity: its visibility, or DELETED
      // once it is gone (such rows are visible to admins only). FOR SHARE: a concurrent
      // visibility change waits for this transaction (and the reverse), so counts never move
      // under a writer that has not committed.
      `create function labdata_project_class(pid uuid) returns text language plpgsql as $$
       declare cls text;
       begin
         select visibility into cls from project where id = pid for share;
         return coalesce(cls, 'DELETED');
       end $$`,
      // Moves a project's children and activity from one class to another (visibility change,
      // deletion, or a project row arriving after rows that point at it).
      `create function labdata_reclass_project(pid uuid, org uuid, from_cls text, to_cls text) returns void
       language plpgsql as $$
       declare r record;
       begin
         if from_cls = to_cls then return; end if;
         for r in select kind, coalesce(sum(n), 0)::bigint as n from record_count
                   where record_id = pid and kind in ('study', 'assay') group by kind loop
           perform labdata_count(org, r.kind, from_cls, '', '00000000-0000-0000-0000-000000000000', -r.n);
           perform labdata_count(org, r.kind, to_cls, '', '00000000-0000-0000-0000-000000000000', r.n);
         end loop;
         for r in select organization_user_id as actor, category, count(*)::bigint as n from activity
                   where project_id = pid group by 1, 2 loop
           perform labdata_count(org, 'activity', from_cls, r.category, '00000000-0000-0000-0000-000000000000', -r.n);
           perform labdata_count(org, 'activity', to_cls, r.category, '00000000-0000-0000-0000-000000000000', r.n);
           perform labdata_count(org, 'activity', from_cls, r.category, r.actor, -r.n);
           perform labdata_count(org, 'activity', to_cls, r.category, r.actor, r.n);
         end loop;
       end $$`,
      `create function labdata_count_activity() returns trigger language plpgsql as $$
       declare r activity; d bigint; cls text;
       begin
         if tg_op = 'INSERT' then r := new; d := 1; else r := old; d := -1; end if;
         if r.project_id is null then cls := 'NONE'; else cls := labdata_project_class(r.project_id); end if;
         perform labdata_count_record(r.project_id, 'activity', r.category, d);
         perform labdata_count_record(r.study_id, 'activity', r.category, d);
         perform labdata_count_record(r.assay_id, 'activity', r.category, d);
         perform labdata_count(r.organization_id, 'activity', cls, r.category, '00000000-0000-0000-0000-000000000000', d);
         perform labdata_count(r.organization_id, 'activity', cls, r.category, r.organization_user_id, d);
         return null;
       end $$`,
      `create trigger activity_count after insert or delete on activity for each row execute function labdata_count_activity()`,
      // A non-admin's view of another user's feed counts that user's rows in the caller's
      // PRIVATE projects through this index (per granted project, index only).
      `create index activity_actor_project_idx on activity (organization_user_id, project_id, category)`,
    ],
  },
  {
    name: 'kernel-0007-activity-references',
    sql: [
      // An activity record may name one more record than the one it sits under (the collection a
      // study joined, the target of a relationship, the other side of a move): shown to a
      // non-admin only if they may view that one too (core/activity, references). The partial
      // index lets a total take back the few such rows the caller may not see.
      `alter table activity add column ref_kind text, add column ref_id uuid`,
      `create index activity_ref_idx on activity (organization_id, project_id) where ref_kind is not null`,
      // Records are judged where they are now: a move re-homes its record's activity (an UPDATE
      // of project_id/study_id), so the counters follow updates too.
      // (Applied migrations never change: the body of the trigger function above moves into
      // this one, and the function is replaced, so its lines stand here twice.)
      `create function labdata_count_activity_row(r activity, d bigint) returns void language plpgsql as $$
       declare cls text;
       begin
         if r.project_id is null then cls := 'NONE'; else cls := labdata_project_class(r.project_id); end if;
         perform labdata_count_record(r.project_id, 'activity', r.category, d);
         perform labdata_count_record(r.study_id, 'activity', r.category, d);
         perform labdata_count_record(r.assay_id, 'activity', r.category, d);
         perform labdata_count(r.organization_id, 'activity', cls, r.category, '00000000-0000-0000-0000-000000000000', d);
         perform labdata_count(r.organization_id, 'activity', cls, r.category, r.organization_user_id, d);
       end $$`,
      `create or replace function labdata_count_activity() returns trigger language plpgsql as $$
       begin
         if tg_op in ('DELETE', 'UPDATE') then perform labdata_count_activity_row(old, -1); end if;
         if tg_op in ('INSERT', 'UPDATE') then perform labdata_count_activity_row(new, 1); end if;
         return null;
       end $$`,
      `drop trigger activity_count on activity`,
      `create trigger activity_count after insert or delete or update of project_id, study_id, assay_id on activity
         for each row execute function labdata_count_activity()`,
    ],
  },
  {
    name: 'kernel-0008-activity-counting-to-projects',
    sql: [
      // Activity is counted per statement by the projects plugin now (projects-0006): it counts
      // in its project's visibility class, and that plugin's part of the recount counted it already.
      `drop trigger activity_count on activity`,
      `drop function labdata_count_activity()`,
      `drop function labdata_count_activity_row(activity, bigint)`,
      `drop function labdata_reclass_project(uuid, uuid, text, text)`,
    ],
  },
  {
    name: 'kernel-0011-visibility-count-by-actor',
    sql: [
      // Every total names its acting user (the nil one for "everyone"), not always a category:
      // keyed category first, a total without categories read every acting user's rows of the
      // organization (a member's feed: 2.5 ms of database CPU with 5,000 users who acted, 0.34 ms
      // keyed so). ON CONFLICT names the columns, not the order: the upserts are unchanged.
      `alter table visibility_count drop constraint visibility_count_pkey,
         add primary key (organization_id, kind, actor_id, class, category, shard)`,
    ],
  },
  {
    name: 'kernel-0013-activity-record-estimates',
    sql: [
      // A record's feed runs as a generic plan, blind to which record: estimated from the average
      // (ten entries a project), it sorted every entry of the project to show twenty, 19 ms a
      // page for a project with 20,000 (O(the project's history)). Estimated at a couple of
      // thousand entries a record, the page walks the record's date index and stops. The
      // setting outlives every ANALYZE; the ANALYZE applies it now.
      `alter table activity alter column project_id set (n_distinct = -0.0005),
         alter column study_id set (n_distinct = -0.0005), alter column assay_id set (n_distinct = -0.0005)`,
      `analyze activity (project_id, study_id, assay_id)`,
    ],
  },
];
