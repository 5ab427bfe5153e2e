import type { ActivityCategory } from '../../core/public.ts';

/** Event types of the study-collections plugin; `data` shapes are listed in docs/activity.md. */
export const events = {
  'study_collection.created': 'RESEARCH',
  'study_collection.updated': 'RESEARCH',
  'study_collection.visibility_changed': 'GOVERNANCE',
  'study_collection.study_added': 'RESEARCH',
  'study_collection.study_removed': 'RESEARCH',
  'study_collection.deleted': 'RESEARCH',
} satisfies Record<string, ActivityCategory>;
