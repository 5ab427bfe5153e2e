import type { ActivityCategory } from '../../core/public.ts';

/** Event types of the git plugin; `data` shapes are listed in docs/activity.md. */
export const events = {
  'git.repository_created': 'RESEARCH',
} satisfies Record<string, ActivityCategory>;
