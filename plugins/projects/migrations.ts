import type { db } from '../../core/public.ts';

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
  {
    name: 'projects-0006-counters-per-statement',
    sql: [
      // Counters are kept per statement, not per row: one INSERT … SELECT of a million activity
      // rows updated the same counter rows once per row, each update a new row version that none
      // could prune, so a bulk load slowed down quadratically. A statement-level trigger sees the
      // statement's rows at once (a transition table) and adds to each counter row once.
      // A transition table serves one event only: INSERT and DELETE run one function on their
      // rows (+1, -1), an UPDATE its own on the rows whose counted columns changed. (Activity,
      // only ever updated to re-home it, runs the first twice: on the rows as they were, -1, and
      // as they are, +1.)
      // The functions plan every join as index lookups (seqscan, hash and merge joins off): a
      // statement's plan is cached per session and reused whatever the size of the next
      // statement's rows, so a plan made for one row must not be quadratic for a million, and one
      // made for a bulk load must not scan a whole table for the next single-row write. No join
      // pairs two transition tables: an UPDATE's rows as they are now are read from the table.
      // JIT off: disabled plan types inflate the estimated costs past jit_above_cost.
      `drop trigger project_count on project`,
      `drop function labdata_count_project()`,
      `drop trigger project_member_grant_count on project_member`,
      `drop function labdata_count_grant()`,
      `drop trigger record_count_grants on record_count`,
      `drop function labdata_count_grants()`,
      `drop function labdata_grant_project(uuid, uuid, int)`,
      // Adds (sign 1) or takes away (-1) the counts of PRIVATE projects to or from grant holders:
      // one row of kind 'project' per project, plus the project's counts (record_count).
      `create function labdata_count_holders(holders uuid[], projects uuid[], signs bigint[]) returns void language plpgsql
       set enable_seqscan = off set enable_hashjoin = off set enable_mergejoin = off set jit = off as $$
       begin
         insert into grant_count as c (holder_id, kind, category, shard, n)
           select g.holder, x.kind, x.category, pg_backend_pid() % 8, sum(g.sign * x.n)
             from unnest(holders, projects, signs) g (holder, project, sign)
            cross join lateral (select 'project' as kind, '' as category, 1::bigint as n
                                union all select r.kind, r.category, sum(r.n)::bigint from record_count r where r.record_id = g.project group by 1, 2) x
            where g.holder is not null
            group by 1, 2, 3 having sum(g.sign * x.n) <> 0
           on conflict (holder_id, kind, category, shard) do update set n = c.n + excluded.n;
       end $$`,
      // Projects moving between visibility classes: \`befores\` is the class each was counted in
      // (null: it did not exist), \`afters\` the one it counts in now (null: deleted). Their studies,
      // assays and activity move with them (rows of a project not there count as DELETED: a bulk
      // load may bring them before it), their grants carry the new visibility, and the holders of a
      // project that becomes PRIVATE, or stops being, gain or lose its counts.
      `create function labdata_move_projects(ids uuid[], orgs uuid[], befores text[], afters text[]) returns void language plpgsql
       set enable_seqscan = off set enable_hashjoin = off set enable_mergejoin = off set jit = off as $$
       begin
         if ids is null then return; end if;
         insert into visibility_count as c (organization_id, kind, class, category, actor_id, shard, n)
           select m.org, 'project', x.cls, '', '00000000-0000-0000-0000-000000000000'::uuid, pg_backend_pid() % 8, sum(x.d)
             from unnest(ids, orgs, befores, afters) m (id, org, before, after)
            cross join lateral (values (m.before, -1), (m.after, 1)) x (cls, d)
            where x.cls is not null group by 1, 3 having sum(x.d) <> 0
           on conflict (organization_id, kind, category, class, actor_id, shard) do update set n = c.n + excluded.n;
         insert into visibility_count as c (organization_id, kind, class, category, actor_id, shard, n)
           select m.org, r.kind, x.cls, '', '00000000-0000-0000-0000-000000000000'::uuid, pg_backend_pid() % 8, sum(x.d * r.n)
             from unnest(ids, orgs, befores, afters) m (id, org, before, after)
             join record_count r on r.record_id = m.id and r.kind in ('study', 'assay')
            cross join lateral (values (coalesce(m.before, 'DELETED'), -1), (coalesce(m.after, 'DELETED'), 1)) x (cls, d)
            where coalesce(m.before, 'DELETED') <> coalesce(m.after, 'DELETED')
            group by 1, 2, 3 having sum(x.d * r.n) <> 0
           on conflict (organization_id, kind, category, class, actor_id, shard) do update set n = c.n + excluded.n;
         insert into visibility_count as c (organization_id, kind, class, category, actor_id, shard, n)
           select m.org, 'activity', x.cls, a.category, y.actor_id, pg_backend_pid() % 8, sum(x.d)
             from unnest(ids, orgs, befores, afters) m (id, org, before, after)
             join activity a on a.project_id = m.id
            cross join lateral (values (coalesce(m.before, 'DELETED'), -1), (coalesce(m.after, 'DELETED'), 1)) x (cls, d)
            cross join lateral (values ('00000000-0000-0000-0000-000000000000'::uuid), (a.organization_user_id)) y (actor_id)
            where coalesce(m.before, 'DELETED') <> coalesce(m.after, 'DELETED')
            group by 1, 3, 4, 5 having sum(x.d) <> 0
           on conflict (organization_id, kind, category, class, actor_id, shard) do update set n = c.n + excluded.n;
         update project_member pm set project_visibility = m.after
           from unnest(ids, afters) m (id, after)
          where pm.project_id = m.id and m.after is not null and pm.project_visibility is distinct from m.after;
         perform labdata_count_holders(array_agg(coalesce(pm.organization_user_id, pm.team_id)), array_agg(pm.project_id),
                                       array_agg(case when m.after = 'PRIVATE' then 1 else -1 end::bigint))
            from unnest(ids, befores, afters) m (id, before, after) join project_member pm on pm.project_id = m.id
           where 'PRIVATE' in (m.before, m.after) and m.before is distinct from m.after;
       end $$`,
      `create function labdata_count_projects() returns trigger language plpgsql
       set enable_seqscan = off set enable_hashjoin = off set enable_mergejoin = off set jit = off as $$
       begin
         if tg_op = 'INSERT' then
           perform labdata_move_projects(array_agg(id), array_agg(organization_id), array_agg(null::text), array_agg(visibility)) from changed;
         else
           perform labdata_move_projects(array_agg(id), array_agg(organization_id), array_agg(visibility), array_agg(null::text)) from changed;
         end if;
         return null;
       end $$`,
      `create function labdata_count_project_updates() returns trigger language plpgsql
       set enable_seqscan = off set enable_hashjoin = off set enable_mergejoin = off set jit = off as $$
       begin
         perform labdata_move_projects(array_agg(n.id), array_agg(n.organization_id), array_agg(o.visibility), array_agg(n.visibility))
            from old_rows o join project n on n.id = o.id where o.visibility <> n.visibility;
         return null;
       end $$`,
      `create trigger project_count_insert after insert on project referencing new table as changed
         for each statement execute function labdata_count_projects()`,
      `create trigger project_count_delete after delete on project referencing old table as changed
         for each statement execute function labdata_count_projects()`,
      `create trigger project_count_update after update on project referencing old table as old_rows
         for each statement execute function labdata_count_project_updates()`,
      // Grants given (+1) or taken back (-1): their holders gain or lose the counts of the PRIVATE
      // projects among them. FOR NO KEY UPDATE, in id order: grant changes on one project queue,
      // and writers under it (who hold it FOR SHARE) wait for them, so a grant and a write never
      // miss each other.
      `create function labdata_count_grant_rows() returns trigger language plpgsql
       set enable_seqscan = off set enable_hashjoin = off set enable_mergejoin = off set jit = off as $$
       declare d bigint := tg_argv[0]::bigint;
       begin
         perform 1 from project where id in (select project_id from changed) order by id for no key update;
         perform labdata_count_holders(array_agg(coalesce(g.organization_user_id, g.team_id)), array_agg(g.project_id), array_agg(d))
            from changed g join project p on p.id = g.project_id and p.visibility = 'PRIVATE';
         return null;
       end $$`,
      // A grant moved to another project or holder (only its copy of the visibility changes in practice).
      `create function labdata_count_grant_updates() returns trigger language plpgsql
       set enable_seqscan = off set enable_hashjoin = off set enable_mergejoin = off set jit = off as $$
       begin
         -- Grants are given and taken back, not moved: only their copy of the visibility changes
         -- (labdata_move_projects), which moves no count.
         if not exists (select 1 from old_rows o join project_member n on n.id = o.id
                         where (o.project_id, o.organization_user_id, o.team_id) is distinct from (n.project_id, n.organization_user_id, n.team_id)) then
           return null;
         end if;
         perform 1 from project where id in (select project_id from old_rows union select n.project_id from old_rows o join project_member n on n.id = o.id)
           order by id for no key update;
         perform labdata_count_holders(array_agg(g.holder), array_agg(g.project_id), array_agg(g.d))
            from (select coalesce(o.organization_user_id, o.team_id) as holder, o.project_id, -1::bigint as d from old_rows o
                  union all select coalesce(n.organization_user_id, n.team_id), n.project_id, 1 from old_rows o join project_member n on n.id = o.id) g
            join project p on p.id = g.project_id and p.visibility = 'PRIVATE';
         return null;
       end $$`,
      `create trigger project_member_grant_count_insert after insert on project_member referencing new table as changed
         for each statement execute function labdata_count_grant_rows('1')`,
      `create trigger project_member_grant_count_delete after delete on project_member referencing old table as changed
         for each statement execute function labdata_count_grant_rows('-1')`,
      `create trigger project_member_grant_count_update after update on project_member referencing old table as old_rows
         for each statement execute function labdata_count_grant_updates()`,
      // A count under a PRIVATE project changed: so did each of its holders'. Off while
      // \`labdata recount\` rebuilds (it computes the holders' counts itself).
      `create function labdata_count_grant_deltas() returns trigger language plpgsql
       set enable_seqscan = off set enable_hashjoin = off set enable_mergejoin = off set jit = off as $$
       begin
         if current_setting('labdata.recount', true) = 'on' then return null; end if;
         if tg_op = 'UPDATE' then
           insert into grant_count as c (holder_id, kind, category, shard, n)
             select coalesce(pm.organization_user_id, pm.team_id), r.kind, r.category, pg_backend_pid() % 8, sum(r.n - o.n)
               from old_rows o join record_count r using (record_id, kind, category, shard)
               join project p on p.id = r.record_id and p.visibility = 'PRIVATE'
               join project_member pm on pm.project_id = r.record_id
              group by 1, 2, 3 having sum(r.n - o.n) <> 0
             on conflict (holder_id, kind, category, shard) do update set n = c.n + excluded.n;
         else
           insert into grant_count as c (holder_id, kind, category, shard, n)
             select coalesce(pm.organization_user_id, pm.team_id), r.kind, r.category, pg_backend_pid() % 8,
                    sum(case when tg_op = 'DELETE' then -r.n else r.n end)
               from changed r
               join project p on p.id = r.record_id and p.visibility = 'PRIVATE'
               join project_member pm on pm.project_id = r.record_id
              group by 1, 2, 3 having sum(r.n) <> 0
             on conflict (holder_id, kind, category, shard) do update set n = c.n + excluded.n;
         end if;
         return null;
       end $$`,
      `create trigger record_count_grants_insert after insert on record_count referencing new table as changed
         for each statement execute function labdata_count_grant_deltas()`,
      `create trigger record_count_grants_delete after delete on record_count referencing old table as changed
         for each statement execute function labdata_count_grant_deltas()`,
      `create trigger record_count_grants_update after update on record_count referencing old table as old_rows
         for each statement execute function labdata_count_grant_deltas()`,
      `create function labdata_count_activity_rows() returns trigger language plpgsql
       set enable_seqscan = off set enable_hashjoin = off set enable_mergejoin = off set jit = off as $$
       declare d bigint := tg_argv[0]::bigint;
       begin
         -- FOR SHARE, in id order: a concurrent visibility change of a project waits for this
         -- transaction (and the reverse), so counts never move under a writer that has not committed.
         perform 1 from project where id in (select project_id from changed) order by id for share;
         insert into record_count as c (record_id, kind, category, shard, n)
           select x.record_id, 'activity', r.category, pg_backend_pid() % 8, d * count(*)
             from changed r cross join lateral (values (r.project_id), (r.study_id), (r.assay_id)) x (record_id)
            where x.record_id is not null group by 1, 3
           on conflict (record_id, kind, category, shard) do update set n = c.n + excluded.n;
         insert into visibility_count as c (organization_id, kind, class, category, actor_id, shard, n)
           select r.organization_id, 'activity', case when r.project_id is null then 'NONE' else coalesce(p.visibility, 'DELETED') end,
                  r.category, x.actor_id, pg_backend_pid() % 8, d * count(*)
             from changed r left join project p on p.id = r.project_id
            cross join lateral (values ('00000000-0000-0000-0000-000000000000'::uuid), (r.organization_user_id)) x (actor_id)
            group by 1, 3, 4, 5
           on conflict (organization_id, kind, category, class, actor_id, shard) do update set n = c.n + excluded.n;
         return null;
       end $$`,
      `create trigger activity_count_insert after insert on activity referencing new table as changed
         for each statement execute function labdata_count_activity_rows('1')`,
      `create trigger activity_count_delete after delete on activity referencing old table as changed
         for each statement execute function labdata_count_activity_rows('-1')`,
      // Named so that the old rows leave their counts before the new ones arrive (triggers fire by name).
      `create trigger activity_count_update_1_old after update on activity referencing old table as changed
         for each statement execute function labdata_count_activity_rows('-1')`,
      `create trigger activity_count_update_2_new after update on activity referencing new table as changed
         for each statement execute function labdata_count_activity_rows('1')`,
    ],
  },
];
