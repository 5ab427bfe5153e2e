import type { ActivityCategory } from '../../core/public.ts';

/** Event types of the storage plugin; `data` shapes are listed in docs/activity.md. */
export const events = {
  'storage_folder.attached': 'RESEARCH',
  'storage_folder.detached': 'RESEARCH',
  'storage_folder.primary_changed': 'RESEARCH',
  'storage_folder.created': 'RESEARCH',
} satisfies Record<string, ActivityCategory>;
