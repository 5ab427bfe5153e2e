import type { ActivityCategory } from '../../core/public.ts';

/** Event types of the eln-a plugin; `data` shapes are listed in docs/activity.md. */
export const events = {
  'eln_a.folder_linked': 'RESEARCH',
  'eln_a.folder_verified': 'RESEARCH',
  'eln_a.folder_created': 'RESEARCH',
  'eln_a.entry_created': 'RESEARCH',
} satisfies Record<string, ActivityCategory>;
