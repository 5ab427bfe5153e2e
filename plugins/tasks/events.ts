import type { ActivityCategory } from '../../core/public.ts';

/** Event types of the tasks plugin; `data` shapes are listed in docs/activity.md. */
export const events = {
  'task.created': 'RESEARCH',
  'task.updated': 'RESEARCH',
  'task.completed': 'RESEARCH',
  'task.deleted': 'RESEARCH',
} satisfies Record<string, ActivityCategory>;
