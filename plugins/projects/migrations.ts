import type { db } from '../../core/public.ts';
import { projectSearch } from './search.ts';

export const migrations: db.MigrationDefinition[] = [
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
  {
    name: 'projects-0002-counters',
    sql: [
      // Page totals (core/counters): a project counts in its organization's class (visibility);
      // its children and activity move with it when the visibility changes or it is deleted.
      `create function labdata_count_project() returns trigger language plpgsql as $$
       begin
         if tg_op = 'INSERT' then
           perform labdata_count(new.organization_id, 'project', new.visibility, '', '00000000-0000-0000-0000-000000000000', 1);
           -- Rows loaded before their project (bulk loads) were counted as DELETED: adopt them.
           perform labdata_reclass_project(new.id, new.organization_id, 'DELETED', new.visibility);
         elsif tg_op = 'DELETE' then
           perform labdata_count(old.organization_id, 'project', old.visibility, '', '00000000-0000-0000-0000-000000000000', -1);
           perform labdata_reclass_project(old.id, old.organization_id, old.visibility, 'DELETED');
         elsif old.visibility <> new.visibility then
           perform labdata_count(old.organization_id, 'project', old.visibility, '', '00000000-0000-0000-0000-000000000000', -1);
           perform labdata_count(new.organization_id, 'project', new.visibility, '', '00000000-0000-0000-0000-000000000000', 1);
           perform labdata_reclass_project(new.id, new.organization_id, old.visibility, new.visibility);
         end if;
         return null;
       end $$`,
      `create trigger project_count after insert or delete or update of visibility on project
         for each row execute function labdata_count_project()`,
      // The other sortable fields of the list (name, code): a page walks an index, never a sort of the tenant.
      `create index project_org_name_idx on project (organization_id, name, id)`,
      `create index project_org_code_idx on project (organization_id, code, id)`,
    ],
  },
  {
    name: 'projects-0003-grant-visibility',
    sql: [
      // A grant carries its project's visibility, so "the PRIVATE projects I am granted" (the
      // per-caller part of a page total) is one range of an index on the caller's grants:
      // O(the caller's PRIVATE grants), no probe of the project table per grant. Kept by the
      // triggers below; \`labdata recount\` repairs rows loaded without them.
      `alter table project_member add column project_visibility text`,
      `create index project_member_user_visibility_idx on project_member (organization_user_id, project_visibility, project_id)`,
      `create index project_member_team_visibility_idx on project_member (team_id, project_visibility, project_id) where team_id is not null`,
      `create function labdata_grant_visibility() returns trigger language plpgsql as $$
       begin
         -- FOR SHARE: a concurrent visibility change waits for this grant (and the reverse).
         select visibility into new.project_visibility from project where id = new.project_id for share;
         return new;
       end $$`,
      `create trigger project_member_visibility before insert or update of project_id on project_member
         for each row execute function labdata_grant_visibility()`,
      // Applied migrations never change: the function is replaced whole, so it repeats the earlier version's unchanged lines.
      `create or replace function labdata_count_project() returns trigger language plpgsql as $$
       begin
         if tg_op = 'INSERT' then
           perform labdata_count(new.organization_id, 'project', new.visibility, '', '00000000-0000-0000-0000-000000000000', 1);
           -- Rows loaded before their project (bulk loads, or grants flushed first) catch up.
           perform labdata_reclass_project(new.id, new.organization_id, 'DELETED', new.visibility);
           update project_member set project_visibility = new.visibility
            where project_id = new.id and project_visibility is distinct from new.visibility;
         elsif tg_op = 'DELETE' then
           perform labdata_count(old.organization_id, 'project', old.visibility, '', '00000000-0000-0000-0000-000000000000', -1);
           perform labdata_reclass_project(old.id, old.organization_id, old.visibility, 'DELETED');
         elsif old.visibility <> new.visibility then
           perform labdata_count(old.organization_id, 'project', old.visibility, '', '00000000-0000-0000-0000-000000000000', -1);
           perform labdata_count(new.organization_id, 'project', new.visibility, '', '00000000-0000-0000-0000-000000000000', 1);
           perform labdata_reclass_project(new.id, new.organization_id, old.visibility, new.visibility);
           update project_member set project_visibility = new.visibility where project_id = new.id;
         end if;
         return null;
       end $$`,
      `update project_member pm set project_visibility = p.visibility from project p where p.id = pm.project_id`,
    ],
  },
  {
    name: 'projects-0004-grant-counters',
    sql: [
      // The per-caller part of a total, kept per grant holder (an organization user or a team):
      // grant_count(holder) = the counts (record_count) of the PRIVATE projects granted to it,
      // plus one row of kind 'project' per such project. A caller's PRIVATE total is then the sum
      // over itself and its active teams (minus projects reached twice, see
      // plugins/projects/extensions.ts): O(1 + teams) rows, whatever the number of grants.
      `create table grant_count (
        holder_id uuid not null,
        kind text not null,
        category text not null default '',
        shard smallint not null default 0,
        n bigint not null,
        primary key (holder_id, kind, category, shard))`,
      // The triggers below walk a project's holders on every count change under it.
      `create index project_member_project_idx on project_member (project_id) include (organization_user_id, team_id)`,
      `create function labdata_count_holder(h uuid, k text, cat text, delta bigint) returns void
       language sql as $$
         insert into grant_count as c (holder_id, kind, category, shard, n)
         select h, k, cat, pg_backend_pid() % 8, delta where delta <> 0 and h is not null
         on conflict (holder_id, kind, category, shard) do update set n = c.n + excluded.n
       $$`,
      // Adds (sign 1) or takes away (-1) a PRIVATE project's counts to or from one holder.
      `create function labdata_grant_project(h uuid, pid uuid, sign int) returns void language plpgsql as $$
       declare r record;
       begin
         perform labdata_count_holder(h, 'project', '', sign);
         for r in select kind, category, sum(n)::bigint as n from record_count where record_id = pid group by 1, 2 loop
           perform labdata_count_holder(h, r.kind, r.category, sign * r.n);
         end loop;
       end $$`,
      // A count under a PRIVATE project changed: so did each of its holders'. The writer holds
      // the project FOR SHARE (labdata_project_class), and grant changes lock it FOR NO KEY
      // UPDATE, so a grant and a write never miss each other. Off while \`labdata recount\` rebuilds.
      `create function labdata_count_grants() returns trigger language plpgsql as $$
       declare d bigint; r record_count; h uuid;
       begin
         if current_setting('labdata.recount', true) = 'on' then return null; end if;
         if tg_op = 'DELETE' then r := old; d := -old.n;
         elsif tg_op = 'INSERT' then r := new; d := new.n;
         else r := new; d := new.n - old.n; end if;
         if d = 0 or not exists (select 1 from project where id = r.record_id and visibility = 'PRIVATE') then return null; end if;
         for h in select coalesce(organization_user_id, team_id) from project_member where project_id = r.record_id loop
           perform labdata_count_holder(h, r.kind, r.category, d);
         end loop;
         return null;
       end $$`,
      `create trigger record_count_grants after insert or update or delete on record_count
         for each row execute function labdata_count_grants()`,
      // FOR NO KEY UPDATE (was FOR SHARE): grant changes on one project queue instead of
      // deadlocking on a lock upgrade in the trigger below, and writers in it wait for them.
      `create or replace function labdata_grant_visibility() returns trigger language plpgsql as $$
       begin
         select visibility into new.project_visibility from project where id = new.project_id for no key update;
         return new;
       end $$`,
      `create function labdata_count_grant() returns trigger language plpgsql as $$
       declare v text;
       begin
         if tg_op in ('DELETE', 'UPDATE') then
           select visibility into v from project where id = old.project_id for no key update;
           if v = 'PRIVATE' then perform labdata_grant_project(coalesce(old.organization_user_id, old.team_id), old.project_id, -1); end if;
         end if;
         if tg_op in ('INSERT', 'UPDATE') then
           select visibility into v from project where id = new.project_id for no key update;
           if v = 'PRIVATE' then perform labdata_grant_project(coalesce(new.organization_user_id, new.team_id), new.project_id, 1); end if;
         end if;
         return null;
       end $$`,
      `create trigger project_member_grant_count after insert or delete or update of project_id, organization_user_id, team_id
         on project_member for each row execute function labdata_count_grant()`,
      // Applied migrations never change: the function is replaced whole, so it repeats the earlier version's unchanged lines.
      `create or replace function labdata_count_project() returns trigger language plpgsql as $$
       declare h uuid;
       begin
         if tg_op = 'INSERT' then
           perform labdata_count(new.organization_id, 'project', new.visibility, '', '00000000-0000-0000-0000-000000000000', 1);
           -- Rows loaded before their project (bulk loads, or grants flushed first) catch up.
           perform labdata_reclass_project(new.id, new.organization_id, 'DELETED', new.visibility);
           update project_member set project_visibility = new.visibility
            where project_id = new.id and project_visibility is distinct from new.visibility;
           if new.visibility = 'PRIVATE' then
             for h in select coalesce(organization_user_id, team_id) from project_member where project_id = new.id loop
               perform labdata_grant_project(h, new.id, 1);
             end loop;
           end if;
         elsif tg_op = 'DELETE' then
           perform labdata_count(old.organization_id, 'project', old.visibility, '', '00000000-0000-0000-0000-000000000000', -1);
           perform labdata_reclass_project(old.id, old.organization_id, old.visibility, 'DELETED');
           if old.visibility = 'PRIVATE' then
             for h in select coalesce(organization_user_id, team_id) from project_member where project_id = old.id loop
               perform labdata_grant_project(h, old.id, -1);
             end loop;
           end if;
         elsif old.visibility <> new.visibility then
           perform labdata_count(old.organization_id, 'project', old.visibility, '', '00000000-0000-0000-0000-000000000000', -1);
           perform labdata_count(new.organization_id, 'project', new.visibility, '', '00000000-0000-0000-0000-000000000000', 1);
           perform labdata_reclass_project(new.id, new.organization_id, old.visibility, new.visibility);
           update project_member set project_visibility = new.visibility where project_id = new.id;
           if 'PRIVATE' in (old.visibility, new.visibility) then
             for h in select coalesce(organization_user_id, team_id) from project_member where project_id = new.id loop
               perform labdata_grant_project(h, new.id, case when new.visibility = 'PRIVATE' then 1 else -1 end);
             end loop;
           end if;
         end if;
         return null;
       end $$`,
    ],
  },
  {
    name: 'projects-0005-sort-indexes',
    sql: [
      // Every sortable field of the list has an index for each direction (the tie-breaker, id,
      // runs ascending both ways), so a sorted page walks one and stops after the page: a sort of
      // the whole tenant cost 0.1-1 s at 300,000 rows.
      `create index project_org_updatedat_idx on project (organization_id, updated_at, id)`,
      `create index project_org_updatedat_desc_idx on project (organization_id, updated_at desc, id)`,
      `create index project_org_status_idx on project (organization_id, status, id)`,
      `create index project_org_status_desc_idx on project (organization_id, status desc, id)`,
      // projects-0001's project_org_visibility_idx (organization_id, visibility) stays: dropping it
      // would lock the table for reads while the migrations run.
      `create index project_org_visibility_id_idx on project (organization_id, visibility, id)`,
      `create index project_org_visibility_desc_idx on project (organization_id, visibility desc, id)`,
      `create index project_org_name_desc_idx on project (organization_id, name desc, id)`,
      `create index project_org_code_desc_idx on project (organization_id, code desc, id)`,
    ],
  },
  // Searchable (plugins/search): always the last migration, it reads the table as the others leave it.
  projectSearch.migration,
];
