import type { ActivityCategory } from '../../core/public.ts';

/** Teams are organization-level records; who is in them decides project access (GOVERNANCE). */
export const events = {
  'team.created': 'ADMINISTRATIVE',
  'team.updated': 'ADMINISTRATIVE',
  'team.members_added': 'GOVERNANCE',
  'team.members_removed': 'GOVERNANCE',
} satisfies Record<string, ActivityCategory>;
