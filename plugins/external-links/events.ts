import type { ActivityCategory } from '../../core/public.ts';

/** Event types of the external-links plugin; `data` shapes are listed in docs/activity.md. */
export const events = {
  'external_link.created': 'RESEARCH',
  'external_link.updated': 'RESEARCH',
  'external_link.deleted': 'RESEARCH',
} satisfies Record<string, ActivityCategory>;
