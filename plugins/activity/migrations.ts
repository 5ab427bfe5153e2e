import type { db } from '../../core/public.ts';

/** None: `activity` is a kernel table (every plugin writes it through `services.activity`). */
export const migrations: db.MigrationDefinition[] = [];
