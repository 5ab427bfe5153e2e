import type { MigrationDefinition } from '../../core/public.ts';

export const migrations: MigrationDefinition[] = [
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
];
