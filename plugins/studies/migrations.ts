import type { db } from '../../core/public.ts';

export const migrations: db.MigrationDefinition[] = [
  {
    name: 'studies-0001-init',
    sql: [
      `create table study (
        id uuid primary key,
        organization_id uuid not null references organization (id) deferrable initially deferred,
        project_id uuid not null references project (id) deferrable initially deferred,
        name text not null,
        description text,
        status text not null,
        start_date timestamptz,
        archived boolean not null default false,
        created_by_id uuid not null references organization_user (id) deferrable initially deferred,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now(),
        version integer not null default 1)`,
      `create index study_org_created_idx on study (organization_id, created_at desc, id)`,
      `create index study_project_idx on study (project_id, created_at desc, id)`,
    ],
  },
  {
    name: 'studies-0002-counters',
    sql: [
      // Page totals (core/counters): a study counts in its project's class and under its project;
      // a move takes its assays' counts along.
      `create function labdata_count_study() returns trigger language plpgsql as $$
       declare cls text; old_cls text; n bigint;
       begin
         if tg_op = 'INSERT' then
           cls := labdata_project_class(new.project_id);
           perform labdata_count(new.organization_id, 'study', cls, '', '00000000-0000-0000-0000-000000000000', 1);
           perform labdata_count_record(new.project_id, 'study', '', 1);
           -- Assays loaded before their study (bulk loads) were counted as DELETED: adopt them.
           n := labdata_record_total(new.id, 'assay');
           perform labdata_count(new.organization_id, 'assay', 'DELETED', '', '00000000-0000-0000-0000-000000000000', -n);
           perform labdata_count(new.organization_id, 'assay', cls, '', '00000000-0000-0000-0000-000000000000', n);
           perform labdata_count_record(new.project_id, 'assay', '', n);
         elsif tg_op = 'DELETE' then
           cls := labdata_project_class(old.project_id);
           perform labdata_count(old.organization_id, 'study', cls, '', '00000000-0000-0000-0000-000000000000', -1);
           perform labdata_count_record(old.project_id, 'study', '', -1);
         elsif old.project_id <> new.project_id then
           -- Both projects, in id order (the order writers lock them in).
           perform 1 from project where id in (old.project_id, new.project_id) order by id for share;
           old_cls := labdata_project_class(old.project_id);
           cls := labdata_project_class(new.project_id);
           n := labdata_record_total(new.id, 'assay');
           perform labdata_count(new.organization_id, 'study', old_cls, '', '00000000-0000-0000-0000-000000000000', -1);
           perform labdata_count(new.organization_id, 'study', cls, '', '00000000-0000-0000-0000-000000000000', 1);
           perform labdata_count(new.organization_id, 'assay', old_cls, '', '00000000-0000-0000-0000-000000000000', -n);
           perform labdata_count(new.organization_id, 'assay', cls, '', '00000000-0000-0000-0000-000000000000', n);
           perform labdata_count_record(old.project_id, 'study', '', -1);
           perform labdata_count_record(new.project_id, 'study', '', 1);
           perform labdata_count_record(old.project_id, 'assay', '', -n);
           perform labdata_count_record(new.project_id, 'assay', '', n);
         end if;
         return null;
       end $$`,
      `create trigger study_count after insert or delete or update of project_id on study
         for each row execute function labdata_count_study()`,
    ],
  },
  {
    name: 'studies-0003-activity-references',
    sql: [
      // A move names the other project (kernel-0007); a moved study's history sits where it is now.
      `update activity set ref_kind = 'project',
         ref_id = case when project_id = (data->>'fromProjectId')::uuid then (data->>'toProjectId')::uuid else (data->>'fromProjectId')::uuid end
       where event_type = 'study.moved' and ref_kind is null`,
      `update activity a set project_id = s.project_id from study s
        where s.id = a.study_id and a.project_id is distinct from s.project_id and a.event_type <> 'study.moved'`,
    ],
  },
  {
    name: 'studies-0004-sort-indexes',
    sql: [
      // Every sortable field of the list has an index for each direction (the tie-breaker, id,
      // runs ascending both ways), so a sorted page walks one and stops after the page: a sort of
      // the whole tenant cost 0.1-1 s at 300,000 rows.
      `create index study_org_updatedat_idx on study (organization_id, updated_at, id)`,
      `create index study_org_updatedat_desc_idx on study (organization_id, updated_at desc, id)`,
      `create index study_org_name_idx on study (organization_id, name, id)`,
      `create index study_org_name_desc_idx on study (organization_id, name desc, id)`,
      `create index study_org_startdate_idx on study (organization_id, start_date, id)`,
      `create index study_org_startdate_desc_idx on study (organization_id, start_date desc, id)`,
      `create index study_org_status_idx on study (organization_id, status, id)`,
      `create index study_org_status_desc_idx on study (organization_id, status desc, id)`,
    ],
  },
  {
    name: 'studies-0005-code',
    sql: [
      // How labs name their studies (Study Tracker's codes, e.g. an import): optional, unique in
      // the organization ignoring case, so the index also finds a code typed in another case.
      `alter table study add column code text`,
      `create unique index study_org_code_key on study (organization_id, lower(code)) where code is not null`,
    ],
  },
  {
    name: 'studies-0006-counters-per-statement',
    sql: [
      // Counters are kept per statement, not per row (projects-0006 says why).
      `drop trigger study_count on study`,
      `drop function labdata_count_study()`,
      // Studies added (+1) or taken away (-1), per project: counted in the project's class (DELETED
      // when it is not there) and under it. The projects are share-locked in id order: a
      // concurrent visibility change waits for this transaction (and the reverse).
      `create function labdata_count_study_groups(orgs uuid[], projects uuid[], signs bigint[]) returns void language plpgsql
       set enable_seqscan = off set enable_hashjoin = off set enable_mergejoin = off set jit = off as $$
       begin
         if projects is null then return; end if;
         perform 1 from project where id = any (projects) order by id for share;
         insert into visibility_count as c (organization_id, kind, class, category, actor_id, shard, n)
           select g.org, 'study', coalesce(p.visibility, 'DELETED'), '', '00000000-0000-0000-0000-000000000000'::uuid, pg_backend_pid() % 8, sum(g.sign)
             from unnest(orgs, projects, signs) g (org, project, sign) left join project p on p.id = g.project
            group by 1, 3 having sum(g.sign) <> 0
           on conflict (organization_id, kind, category, class, actor_id, shard) do update set n = c.n + excluded.n;
         insert into record_count as c (record_id, kind, category, shard, n)
           select g.project, 'study', '', pg_backend_pid() % 8, sum(g.sign)
             from unnest(projects, signs) g (project, sign) where g.project is not null
            group by 1 having sum(g.sign) <> 0
           on conflict (record_id, kind, category, shard) do update set n = c.n + excluded.n;
       end $$`,
      // Studies whose assays move from one project to another (\`froms\`, \`tos\`; null: none, their
      // assays counted as DELETED): a move, or a study arriving after its assays (bulk loads).
      `create function labdata_carry_assays(orgs uuid[], studies uuid[], froms uuid[], tos uuid[]) returns void language plpgsql
       set enable_seqscan = off set enable_hashjoin = off set enable_mergejoin = off set jit = off as $$
       begin
         if studies is null then return; end if;
         insert into visibility_count as c (organization_id, kind, class, category, actor_id, shard, n)
           select m.org, 'assay', coalesce(p.visibility, 'DELETED'), '', '00000000-0000-0000-0000-000000000000'::uuid, pg_backend_pid() % 8, sum(x.d * r.n)
             from unnest(orgs, studies, froms, tos) m (org, study, from_project, to_project)
             join lateral (select sum(n)::bigint as n from record_count where record_id = m.study and kind = 'assay') r on r.n <> 0
            cross join lateral (values (m.from_project, -1), (m.to_project, 1)) x (project, d)
             left join project p on p.id = x.project
            group by 1, 3 having sum(x.d * r.n) <> 0
           on conflict (organization_id, kind, category, class, actor_id, shard) do update set n = c.n + excluded.n;
         insert into record_count as c (record_id, kind, category, shard, n)
           select x.project, 'assay', '', pg_backend_pid() % 8, sum(x.d * r.n)
             from unnest(studies, froms, tos) m (study, from_project, to_project)
             join lateral (select sum(n)::bigint as n from record_count where record_id = m.study and kind = 'assay') r on r.n <> 0
            cross join lateral (values (m.from_project, -1), (m.to_project, 1)) x (project, d)
            where x.project is not null
            group by 1 having sum(x.d * r.n) <> 0
           on conflict (record_id, kind, category, shard) do update set n = c.n + excluded.n;
       end $$`,
      `create function labdata_count_study_rows() returns trigger language plpgsql
       set enable_seqscan = off set enable_hashjoin = off set enable_mergejoin = off set jit = off as $$
       declare d bigint := tg_argv[0]::bigint;
       begin
         perform labdata_count_study_groups(array_agg(organization_id), array_agg(project_id), array_agg(d)) from changed;
         -- Assays loaded before their study (bulk loads) were counted as DELETED: adopt them.
         if d > 0 then
           perform labdata_carry_assays(array_agg(organization_id), array_agg(id), array_agg(null::uuid), array_agg(project_id)) from changed;
         end if;
         return null;
       end $$`,
      // Moves: the study leaves its project's class and count for the other's, and takes its assays' counts along.
      `create function labdata_count_study_moves() returns trigger language plpgsql
       set enable_seqscan = off set enable_hashjoin = off set enable_mergejoin = off set jit = off as $$
       begin
         perform labdata_count_study_groups(array_agg(g.org), array_agg(g.project), array_agg(g.d))
            from (select o.organization_id as org, o.project_id as project, -1::bigint as d from old_rows o join study n on n.id = o.id where n.project_id <> o.project_id
                  union all select n.organization_id, n.project_id, 1 from old_rows o join study n on n.id = o.id where n.project_id <> o.project_id) g;
         perform labdata_carry_assays(array_agg(n.organization_id), array_agg(n.id), array_agg(o.project_id), array_agg(n.project_id))
            from old_rows o join study n on n.id = o.id where n.project_id <> o.project_id;
         return null;
       end $$`,
      `create trigger study_count_insert after insert on study referencing new table as changed
         for each statement execute function labdata_count_study_rows('1')`,
      `create trigger study_count_delete after delete on study referencing old table as changed
         for each statement execute function labdata_count_study_rows('-1')`,
      `create trigger study_count_update after update on study referencing old table as old_rows
         for each statement execute function labdata_count_study_moves()`,
    ],
  },
];
