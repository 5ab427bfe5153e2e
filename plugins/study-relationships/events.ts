import type { ActivityCategory } from '../../core/public.ts';

/** Event types of the study-relationships plugin; `data` shapes are listed in docs/activity.md. */
export const events = {
  'study_relationship.created': 'RESEARCH',
  'study_relationship.deleted': 'RESEARCH',
} satisfies Record<string, ActivityCategory>;
