import type { ActivityCategory } from '../../core/public.ts';

/** Event types of the assay-types plugin (organization-level, no record ids); `data` shapes are in the README. */
export const events = {
  'assay_type.created': 'ADMINISTRATIVE',
  'assay_type.updated': 'ADMINISTRATIVE',
  'assay_type.status_changed': 'ADMINISTRATIVE',
  'assay_type.deleted': 'ADMINISTRATIVE',
} satisfies Record<string, ActivityCategory>;
