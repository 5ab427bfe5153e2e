import type { db } from '../../core/public.ts';

/** None: users and organization users are kernel tables (`app_user`, `organization_user`). */
export const migrations: db.MigrationDefinition[] = [];
