import type { ActivityCategory } from '../../core/public.ts';

/** Event types of the collaborators plugin; `data` shapes are listed in docs/activity.md. */
export const events = {
  'collaborator.created': 'ADMINISTRATIVE',
  'collaborator.updated': 'ADMINISTRATIVE',
  'collaborator.deleted': 'ADMINISTRATIVE',
} satisfies Record<string, ActivityCategory>;
