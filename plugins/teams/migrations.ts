import type { db } from '../../core/public.ts';

/** None: `team` and `team_member` are kernel tables (the permission service reads them). */
export const migrations: db.MigrationDefinition[] = [];
