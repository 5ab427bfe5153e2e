import type { ActivityCategory } from '../../core/public.ts';

/** Event types of the study-relationships plugin; `data` shapes are listed in the README. */
export const events = {
  'study_relationship.created': 'RESEARCH',
  'study_relationship.deleted': 'RESEARCH',
} satisfies Record<string, ActivityCategory>;
