import type { ActivityCategory } from '../../core/public.ts';

/** Event types of the integrations plugin; `data` shapes are listed in docs/activity.md. */
export const events = {
  'personal_integration.disconnected': 'ADMINISTRATIVE',
} satisfies Record<string, ActivityCategory>;
