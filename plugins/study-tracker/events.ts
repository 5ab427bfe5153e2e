import type { ActivityCategory } from '../../core/public.ts';
import { HISTORY_EVENTS, OTHER_EVENT, historyType } from './mapping.ts';

/**
 * History-only event types: Study Tracker events with no counterpart here (comments, file
 * uploads, user administration ...), imported under `study_tracker.<event>`; nothing here
 * records them anew. Events with a counterpart are imported as that plugin's own types.
 */
export const events = {
  ...Object.fromEntries(Object.entries(HISTORY_EVENTS).map(([name, category]) => [historyType(name), category])),
  [OTHER_EVENT]: 'RESEARCH',
} satisfies Record<string, ActivityCategory>;
