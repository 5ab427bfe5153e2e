import type { db } from '../../core/public.ts';

export const migrations: db.MigrationDefinition[] = [
  {
    name: 'keywords-0001-init',
    sql: [
      `create table keyword (
        id uuid primary key,
        organization_id uuid not null references organization (id) deferrable initially deferred,
        value text not null,
        created_by_id uuid not null references organization_user (id) deferrable initially deferred,
        created_at timestamptz not null default now())`,
      // Values are unique per organization, case-sensitively (a plain btree on text compares
      // exactly); a second insert of the same value, even a concurrent one, fails here (409).
      // The index also serves the default order (value, asc).
      `create unique index keyword_org_value_key on keyword (organization_id, value)`,
    ],
  },
  {
    name: 'keywords-0002-category',
    // The group a keyword belongs to (Study Tracker's keyword categories: "Gene", "Compound" ...);
    // optional, and no part of the value's uniqueness.
    sql: [`alter table keyword add column category text`],
  },
];
