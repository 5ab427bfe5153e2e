import type { ActivityCategory } from '../../core/public.ts';

/** Event types of the eln-b plugin; `data` shapes are listed in docs/activity.md. */
export const events = {
  'eln_b.container_linked': 'RESEARCH',
  'eln_b.container_verified': 'RESEARCH',
  'eln_b.entry_created': 'RESEARCH',
} satisfies Record<string, ActivityCategory>;
