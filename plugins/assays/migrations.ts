import type { db } from '../../core/public.ts';

export const migrations: db.MigrationDefinition[] = [
  {
    name: 'assays-0001-init',
    sql: [
      `create table assay (
        id uuid primary key,
        organization_id uuid not null references organization (id) deferrable initially deferred,
        study_id uuid not null references study (id) deferrable initially deferred,
        assay_type_id uuid not null references assay_type (id) deferrable initially deferred,
        name text not null,
        description text,
        status text not null,
        start_date timestamptz,
        field_values jsonb not null default '{}',
        archived boolean not null default false,
        created_by_id uuid not null references organization_user (id) deferrable initially deferred,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now(),
        version integer not null default 1)`,
      `create index assay_org_created_idx on assay (organization_id, created_at desc, id)`,
      `create index assay_study_idx on assay (study_id, created_at desc, id)`,
      `create index assay_type_idx on assay (assay_type_id)`,
    ],
  },
  {
    name: 'assays-0002-counters',
    sql: [
      // Page totals (core/counters): an assay counts in its project's class, under its study
      // and under its project. The study row is read FOR SHARE so a concurrent study move
      // waits for this transaction (and the reverse).
      `create function labdata_count_assay_in(org uuid, sid uuid, d bigint) returns void language plpgsql as $$
       declare pid uuid; cls text := 'DELETED';
       begin
         select project_id into pid from study where id = sid for share;
         if pid is not null then cls := labdata_project_class(pid); end if;
         perform labdata_count(org, 'assay', cls, '', '00000000-0000-0000-0000-000000000000', d);
         perform labdata_count_record(sid, 'assay', '', d);
         perform labdata_count_record(pid, 'assay', '', d);
       end $$`,
      `create function labdata_count_assay() returns trigger language plpgsql as $$
       begin
         if tg_op = 'INSERT' then
           perform labdata_count_assay_in(new.organization_id, new.study_id, 1);
         elsif tg_op = 'DELETE' then
           perform labdata_count_assay_in(old.organization_id, old.study_id, -1);
         elsif old.study_id <> new.study_id then
           perform labdata_count_assay_in(old.organization_id, old.study_id, -1);
           perform labdata_count_assay_in(new.organization_id, new.study_id, 1);
         end if;
         return null;
       end $$`,
      `create trigger assay_count after insert or delete or update of study_id on assay
         for each row execute function labdata_count_assay()`,
    ],
  },
  {
    name: 'assays-0003-activity-references',
    sql: [
      // A move names the other study (kernel-0007); a moved assay's history sits where it is now.
      `update activity set ref_kind = 'study',
         ref_id = case when study_id = (data->>'fromStudyId')::uuid then (data->>'toStudyId')::uuid else (data->>'fromStudyId')::uuid end
       where event_type = 'assay.moved' and ref_kind is null`,
      `update activity a set study_id = x.study_id, project_id = s.project_id from assay x join study s on s.id = x.study_id
        where x.id = a.assay_id and (a.study_id is distinct from x.study_id or a.project_id is distinct from s.project_id)
          and a.event_type <> 'assay.moved'`,
    ],
  },
  {
    name: 'assays-0004-sort-indexes',
    sql: [
      // Every sortable field of the list has an index for each direction (the tie-breaker, id,
      // runs ascending both ways), so a sorted page walks one and stops after the page: a sort of
      // the whole tenant cost 0.1-1 s at 300,000 rows.
      `create index assay_org_updatedat_idx on assay (organization_id, updated_at, id)`,
      `create index assay_org_updatedat_desc_idx on assay (organization_id, updated_at desc, id)`,
      `create index assay_org_name_idx on assay (organization_id, name, id)`,
      `create index assay_org_name_desc_idx on assay (organization_id, name desc, id)`,
      `create index assay_org_startdate_idx on assay (organization_id, start_date, id)`,
      `create index assay_org_startdate_desc_idx on assay (organization_id, start_date desc, id)`,
      `create index assay_org_status_idx on assay (organization_id, status, id)`,
      `create index assay_org_status_desc_idx on assay (organization_id, status desc, id)`,
    ],
  },
  {
    name: 'assays-0005-code',
    sql: [
      // How labs name their assays (Study Tracker's codes, e.g. an import): optional, unique in
      // the organization ignoring case, so the index also finds a code typed in another case.
      `alter table assay add column code text`,
      `create unique index assay_org_code_key on assay (organization_id, lower(code)) where code is not null`,
    ],
  },
  {
    name: 'assays-0006-counters-per-statement',
    sql: [
      // Counters are kept per statement, not per row (projects-0006 says why).
      `drop trigger assay_count on assay`,
      `drop function labdata_count_assay()`,
      `drop function labdata_count_assay_in(uuid, uuid, bigint)`,
      // Assays added (+1) or taken away (-1), per study: counted in their project's class (DELETED
      // when the study or the project is not there), under the study and under the project. The
      // studies, then their projects, are share-locked in id order: a concurrent move or
      // visibility change waits for this transaction (and the reverse).
      `create function labdata_count_assay_groups(orgs uuid[], studies uuid[], signs bigint[]) returns void language plpgsql
       set enable_seqscan = off set enable_hashjoin = off set enable_mergejoin = off set jit = off as $$
       begin
         if studies is null then return; end if;
         perform 1 from study where id = any (studies) order by id for share;
         perform 1 from project where id in (select project_id from study where id = any (studies)) order by id for share;
         with g as (
           select g.org, g.study, s.project_id as project, coalesce(p.visibility, 'DELETED') as cls, sum(g.sign) as n
             from unnest(orgs, studies, signs) g (org, study, sign)
             left join study s on s.id = g.study left join project p on p.id = s.project_id
            group by 1, 2, 3, 4),
         classes as (
           insert into visibility_count as c (organization_id, kind, class, category, actor_id, shard, n)
           select org, 'assay', cls, '', '00000000-0000-0000-0000-000000000000'::uuid, pg_backend_pid() % 8, sum(n)
             from g group by 1, 3 having sum(n) <> 0
           on conflict (organization_id, kind, category, class, actor_id, shard) do update set n = c.n + excluded.n)
         insert into record_count as c (record_id, kind, category, shard, n)
           select x.record_id, 'assay', '', pg_backend_pid() % 8, sum(g.n)
             from g cross join lateral (values (g.study), (g.project)) x (record_id)
            where x.record_id is not null group by 1 having sum(g.n) <> 0
           on conflict (record_id, kind, category, shard) do update set n = c.n + excluded.n;
       end $$`,
      `create function labdata_count_assay_rows() returns trigger language plpgsql
       set enable_seqscan = off set enable_hashjoin = off set enable_mergejoin = off set jit = off as $$
       declare d bigint := tg_argv[0]::bigint;
       begin
         perform labdata_count_assay_groups(array_agg(organization_id), array_agg(study_id), array_agg(d)) from changed;
         return null;
       end $$`,
      `create function labdata_count_assay_moves() returns trigger language plpgsql
       set enable_seqscan = off set enable_hashjoin = off set enable_mergejoin = off set jit = off as $$
       begin
         perform labdata_count_assay_groups(array_agg(g.org), array_agg(g.study), array_agg(g.d))
            from (select o.organization_id as org, o.study_id as study, -1::bigint as d from old_rows o join assay n on n.id = o.id where n.study_id <> o.study_id
                  union all select n.organization_id, n.study_id, 1 from old_rows o join assay n on n.id = o.id where n.study_id <> o.study_id) g;
         return null;
       end $$`,
      `create trigger assay_count_insert after insert on assay referencing new table as changed
         for each statement execute function labdata_count_assay_rows('1')`,
      `create trigger assay_count_delete after delete on assay referencing old table as changed
         for each statement execute function labdata_count_assay_rows('-1')`,
      `create trigger assay_count_update after update on assay referencing old table as old_rows
         for each statement execute function labdata_count_assay_moves()`,
    ],
  },
];
