import type { ActivityCategory } from '../../core/public.ts';

/** None: the feed only reads what the other plugins record. */
export const events = {} satisfies Record<string, ActivityCategory>;
