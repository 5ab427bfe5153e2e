import type { ActivityCategory } from '../../core/public.ts';

/** Event types of the assays plugin; `data` shapes are listed in docs/activity.md. */
export const events = {
  'assay.created': 'RESEARCH',
  'assay.updated': 'RESEARCH',
  'assay.status_changed': 'RESEARCH',
  'assay.archived': 'RESEARCH',
  'assay.moved': 'RESEARCH',
  'assay.deleted': 'RESEARCH',
} satisfies Record<string, ActivityCategory>;
