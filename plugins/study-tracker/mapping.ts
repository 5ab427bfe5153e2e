import type { ActivityCategory } from '../../core/public.ts';

/** Study Tracker's Status (programs' studies and assays) → the lifecycle status here. */
export const STATUSES = {
  IN_PLANNING: 'CREATED',
  ACTIVE: 'ACTIVE',
  COMPLETE: 'COMPLETE',
  ON_HOLD: 'ON_HOLD',
  NEEDS_ATTENTION: 'ON_HOLD',
  DEPRIORITIZED: 'DEACTIVATED',
} as const;
export const ST_STATUSES = Object.keys(STATUSES) as (keyof typeof STATUSES)[];

/** TaskStatus (TODO, COMPLETE, INCOMPLETE; IN_PROGRESS kept should a version write it). */
export const TASK_STATUSES = ['TODO', 'IN_PROGRESS', 'COMPLETE', 'INCOMPLETE'] as const;

/** CustomEntityFieldType → the assay types' field type here. */
export const FIELD_TYPES = {
  STRING: 'TEXT',
  TEXT: 'LONG_TEXT',
  INTEGER: 'INTEGER',
  FLOAT: 'NUMBER',
  DATE: 'DATE',
  BOOLEAN: 'BOOLEAN',
  DROPDOWN: 'CHOICE',
  FILE: 'FILE',
} as const;
export const ST_FIELD_TYPES = Object.keys(FIELD_TYPES) as (keyof typeof FIELD_TYPES)[];

export const RELATIONSHIP_TYPES = ['IS_RELATED_TO', 'IS_PARENT_OF', 'IS_CHILD_OF', 'IS_BLOCKING', 'IS_BLOCKED_BY', 'IS_PRECEDED_BY', 'IS_SUCCEEDED_BY'] as const;
export type RelationshipType = (typeof RELATIONSHIP_TYPES)[number];
export const INVERSE: Record<RelationshipType, RelationshipType> = {
  IS_RELATED_TO: 'IS_RELATED_TO',
  IS_PARENT_OF: 'IS_CHILD_OF',
  IS_CHILD_OF: 'IS_PARENT_OF',
  IS_BLOCKING: 'IS_BLOCKED_BY',
  IS_BLOCKED_BY: 'IS_BLOCKING',
  IS_PRECEDED_BY: 'IS_SUCCEEDED_BY',
  IS_SUCCEEDED_BY: 'IS_PRECEDED_BY',
};

/**
 * Study Tracker's EventType → the dotted event type here. Events with a counterpart take it
 * (and that plugin's category and data shape); the others keep their name under
 * `study_tracker.` (declared by this plugin, events.ts) with their original data.
 */
export const EVENT_TYPES: Record<string, string> = {
  NEW_PROGRAM: 'project.created',
  UPDATED_PROGRAM: 'project.updated',
  DELETED_PROGRAM: 'project.archived',
  NEW_STUDY: 'study.created',
  UPDATED_STUDY: 'study.updated',
  DELETED_STUDY: 'study.archived',
  RESTORED_STUDY: 'study.archived',
  MOVED_STUDY: 'study.moved',
  STUDY_STATUS_CHANGED: 'study.status_changed',
  NEW_ASSAY: 'assay.created',
  UPDATED_ASSAY: 'assay.updated',
  DELETED_ASSAY: 'assay.archived',
  RESTORED_ASSAY: 'assay.archived',
  MOVED_ASSAY: 'assay.moved',
  ASSAY_STATUS_CHANGED: 'assay.status_changed',
  ASSAY_TASK_ADDED: 'task.created',
  ASSAY_TASK_UPDATED: 'task.updated',
  ASSAY_TASK_DELETED: 'task.deleted',
  NEW_STUDY_RELATIONSHIP: 'study_relationship.created',
  DELETED_STUDY_RELATIONSHIP: 'study_relationship.deleted',
  NEW_STUDY_EXTERNAL_LINK: 'external_link.created',
  UPDATED_STUDY_EXTERNAL_LINK: 'external_link.updated',
  DELETED_STUDY_EXTERNAL_LINK: 'external_link.deleted',
  NEW_ASSAY_TYPE: 'assay_type.created',
  UPDATED_ASSAY_TYPE: 'assay_type.updated',
  DELETED_ASSAY_TYPE: 'assay_type.deleted',
  NEW_STUDY_COLLECTION: 'study_collection.created',
  UPDATED_STUDY_COLLECTION: 'study_collection.updated',
  DELETED_STUDY_COLLECTION: 'study_collection.deleted',
  STUDY_ADDED_TO_COLLECTION: 'study_collection.study_added',
  STUDY_REMOVED_FROM_COLLECTION: 'study_collection.study_removed',
  NEW_COLLABORATOR: 'collaborator.created',
  UPDATED_COLLABORATOR: 'collaborator.updated',
  DELETED_COLLABORATOR: 'collaborator.deleted',
};

/** Events without a counterpart here: history only, kept under `study_tracker.<name>` with their data. */
export const HISTORY_EVENTS: Record<string, ActivityCategory> = {
  FILE_UPLOADED: 'RESEARCH',
  NEW_STUDY_CONCLUSIONS: 'RESEARCH',
  EDITED_STUDY_CONCLUSIONS: 'RESEARCH',
  DELETED_STUDY_CONCLUSIONS: 'RESEARCH',
  NEW_COMMENT: 'RESEARCH',
  EDITED_COMMENT: 'RESEARCH',
  DELETED_COMMENT: 'RESEARCH',
  UPDATED_STUDY_RELATIONSHIP: 'RESEARCH',
  UPDATED_STUDY_KEYWORDS: 'RESEARCH',
  NEW_USER: 'ADMINISTRATIVE',
  UPDATED_USER: 'ADMINISTRATIVE',
  DELETED_USER: 'ADMINISTRATIVE',
  NEW_ENTRY_TEMPLATE: 'ADMINISTRATIVE',
  UPDATED_ENTRY_TEMPLATE: 'ADMINISTRATIVE',
  NEW_STORAGE_LOCATION: 'ADMINISTRATIVE',
  UPDATED_STORAGE_LOCATION: 'ADMINISTRATIVE',
  DELETED_STORAGE_LOCATION: 'ADMINISTRATIVE',
  NEW_INTEGRATION_INSTANCE: 'ADMINISTRATIVE',
  UPDATED_INTEGRATION_INSTANCE: 'ADMINISTRATIVE',
  DELETED_INTEGRATION_INSTANCE: 'ADMINISTRATIVE',
  TEST_EVENT: 'ADMINISTRATIVE',
};

/** An event type of a Study Tracker version this import does not know (kept, with its name, in data). */
export const OTHER_EVENT = 'study_tracker.other';

export const historyType = (eventType: string) => (eventType in HISTORY_EVENTS ? `study_tracker.${eventType.toLowerCase()}` : OTHER_EVENT);
