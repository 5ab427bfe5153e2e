import type { db } from '../../core/public.ts';

/** No entities.ts: the plugin reads and writes these tables with SQL only (no MikroORM entity to keep in step). */
export const migrations: db.MigrationDefinition[] = [
  {
    name: 'eln-b-0001-init',
    sql: [
      // One row per linked record: a project's container (container_id), or a study's or an
      // assay's entry in its project's container (entry_id set once its provisioning step ran).
      `create table eln_b_link (
        record_id uuid primary key,
        organization_id uuid not null references organization (id) deferrable initially deferred,
        record_kind text not null check (record_kind in ('project', 'study', 'assay')),
        integration_id uuid not null,
        container_id bigint not null,
        entry_id bigint,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now())`,
      `create index eln_b_link_org_idx on eln_b_link (organization_id, record_kind)`,
    ],
  },
];
