import type { ActivityCategory } from '../../core/public.ts';

/** Event types of the notes plugin; `data` shapes are listed in the README. */
export const events = {
  'note.updated': 'RESEARCH',
} satisfies Record<string, ActivityCategory>;
