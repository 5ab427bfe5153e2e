import type { db } from '../../core/public.ts';

/** None: grants are rows of the kernel table `project_member`, which the permission service reads. */
export const migrations: db.MigrationDefinition[] = [];
