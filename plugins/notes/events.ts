import type { ActivityCategory } from '../../core/public.ts';

/** Event types of the notes plugin; `data` shapes are listed in docs/activity.md. */
export const events = {
  'note.updated': 'RESEARCH',
} satisfies Record<string, ActivityCategory>;
