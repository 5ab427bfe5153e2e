import type { ActivityCategory } from '../../core/public.ts';

/** Event types of the projects plugin; `data` shapes are listed in docs/activity.md. */
export const events = {
  'project.created': 'RESEARCH',
  'project.updated': 'RESEARCH',
  'project.visibility_changed': 'GOVERNANCE',
  'project.status_changed': 'RESEARCH',
  'project.archived': 'RESEARCH',
  'project.deleted': 'RESEARCH',
} satisfies Record<string, ActivityCategory>;
