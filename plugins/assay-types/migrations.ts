import type { db } from '../../core/public.ts';

export const migrations: db.MigrationDefinition[] = [
  {
    name: 'assay-types-0001-init',
    sql: [
      `create table assay_type (
        id uuid primary key,
        organization_id uuid not null references organization (id) deferrable initially deferred,
        name text not null,
        description text,
        status text not null check (status in ('DRAFT', 'ACTIVE', 'INACTIVE', 'ARCHIVED', 'DELETED')),
        fields jsonb not null default '[]',
        tasks jsonb not null default '[]',
        created_by_id uuid references organization_user (id) deferrable initially deferred,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now(),
        version integer not null default 1)`,
      // One live type per name (case-insensitive) in an organization; a DELETED type frees its name.
      `create unique index assay_type_org_name_uq on assay_type (organization_id, lower(name)) where status <> 'DELETED'`,
      // Default order (name) of the list, which never shows DELETED types.
      `create index assay_type_org_name_idx on assay_type (organization_id, name, id) where status <> 'DELETED'`,
    ],
  },
  {
    name: 'assay-types-0002-defaults-and-task-fields',
    sql: [
      // Fields gain a default value and standard tasks a form of fields (Study Tracker's assay
      // types have both): every stored field and task gets the new property, as new ones have it.
      `update assay_type set
         fields = (select coalesce(jsonb_agg(f || jsonb_build_object('defaultValue', f->'defaultValue') order by n), '[]')
                     from jsonb_array_elements(fields) with ordinality x (f, n)),
         tasks = (select coalesce(jsonb_agg(k || jsonb_build_object('fields', coalesce(k->'fields', '[]')) order by n), '[]')
                    from jsonb_array_elements(tasks) with ordinality x (k, n))`,
    ],
  },
];
