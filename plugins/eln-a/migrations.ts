import type { db } from '../../core/public.ts';

/** No entities.ts: the plugin reads and writes these tables with SQL only (no MikroORM entity to keep in step). */
export const migrations: db.MigrationDefinition[] = [
  {
    name: 'eln-a-0001-init',
    sql: [
      // One row per linked record. A project links an existing folder (folder_id set at once);
      // a study or an assay gets folder_id and entry_id when its provisioning step has run.
      `create table eln_a_link (
        record_id uuid primary key,
        organization_id uuid not null references organization (id) deferrable initially deferred,
        record_kind text not null check (record_kind in ('project', 'study', 'assay')),
        integration_id uuid not null,
        folder_id text,
        entry_id text,
        template_id text,
        template_fields jsonb,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now())`,
      `create index eln_a_link_org_idx on eln_a_link (organization_id, record_kind)`,
    ],
  },
];
