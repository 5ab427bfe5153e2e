import type { ActivityCategory } from '../../core/public.ts';

/** Who may see a project is governance; `data` shapes are listed in docs/activity.md. */
export const events = {
  'project.access_granted': 'GOVERNANCE',
  'project.access_revoked': 'GOVERNANCE',
} satisfies Record<string, ActivityCategory>;
