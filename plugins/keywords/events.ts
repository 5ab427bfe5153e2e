import type { ActivityCategory } from '../../core/public.ts';

/** Event types of the keywords plugin; `data` shapes are listed in docs/activity.md. */
export const events = {
  'keyword.created': 'ADMINISTRATIVE',
} satisfies Record<string, ActivityCategory>;
