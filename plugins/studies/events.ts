import type { ActivityCategory } from '../../core/public.ts';

/** Event types of the studies plugin; `data` shapes are listed in docs/activity.md. */
export const events = {
  'study.created': 'RESEARCH',
  'study.updated': 'RESEARCH',
  'study.status_changed': 'RESEARCH',
  'study.archived': 'RESEARCH',
  'study.moved': 'RESEARCH',
  'study.deleted': 'RESEARCH',
} satisfies Record<string, ActivityCategory>;
