import type { ActivityCategory } from '../../core/public.ts';

/** Event types of the webhooks plugin; `data` shapes are listed in docs/activity.md. */
export const events = {
  'webhook.created': 'ADMINISTRATIVE',
  'webhook.updated': 'ADMINISTRATIVE',
  'webhook.deleted': 'ADMINISTRATIVE',
  'webhook.secret_rotated': 'ADMINISTRATIVE',
  'webhook.disabled': 'ADMINISTRATIVE',
  'webhook.test': 'ADMINISTRATIVE',
} satisfies Record<string, ActivityCategory>;

/** Sent only to the subscription it tests (POST /webhooks/{id}/test), never fanned out to the others. */
export const TEST_EVENT = 'webhook.test';
