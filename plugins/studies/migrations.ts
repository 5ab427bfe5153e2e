import type { db } from '../../core/public.ts';
import { studySearch } from './search.ts';

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
  // Searchable (plugins/search): always the last migration, it reads the table as the others leave it.
  studySearch.migration,
];
