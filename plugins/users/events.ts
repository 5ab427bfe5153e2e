import type { ActivityCategory } from '../../core/public.ts';

/** None: the plugin is read-only (users are created by the bootstrap file and the admin CLI). */
export const events = {} satisfies Record<string, ActivityCategory>;
