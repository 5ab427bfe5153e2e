import type { ActivityCategory } from '../../core/public.ts';

/** Event types of the external-links plugin; `data` shapes are listed in the README. */
export const events = {
  'external_link.created': 'RESEARCH',
  'external_link.updated': 'RESEARCH',
  'external_link.deleted': 'RESEARCH',
} satisfies Record<string, ActivityCategory>;
