/**
 * The record library (package export `labdata/records`): lifecycle records, parents and their
 * attachments, organization-scoped records and record extensions, built on the kernel's public
 * entry point only. Record kinds are declared by plugins; the library names none.
 */
/** Lifecycle states, transitions, the shared PUT rules, status/archive writes and the lifecycle columns. */
export {
  LIFECYCLE_STATUSES,
  LIFECYCLE_TRANSITIONS,
  StatusBody,
  ArchiveQuery,
  transition,
  mergeUpdate,
  statusWrite,
  archiveWrite,
  lifecycleEntityProperties,
  lifecycleProperties,
  lifecycleUpdateProperties,
  describedBodyProperties,
  lifecycleColumns,
  lifecycleDto,
  type LifecycleStatus,
  type LifecycleShape,
} from './lifecycle.ts';
/** A lifecycle record kind declared by its plugin, its shared service and its operation definitions. */
export {
  defineLifecycleRecord,
  newId,
  LifecycleRecords,
  type LifecycleRecordDeclaration,
  type LifecycleEntity,
  type RecordAccess,
  type InitializingHook,
} from './records.ts';
/** The operation definitions of a lifecycle record kind, for its manifest to register. */
export { lifecycleOperations, type LifecycleOperationOptions } from './lifecycle-operations.ts';
/** The parent kinds of a kernel (what attached records sit in) and where an attached record sits. */
export { parentKinds, listUnder, ParentRegistry, type ParentAccess, type ParentKind } from './parents.ts';
/** Helpers for records attached to a parent (routes per parent kind, visibility, cascade, DTO fields). */
export {
  parentParam,
  parentParams,
  parentOf,
  contributableParentOf,
  lockedParent,
  lockedParentOf,
  attachedTo,
  attachedVisible,
  cascadeWithParents,
  parentType,
  parentProperties,
  attachedProperties,
  attachedColumns,
  attachedDto,
  type AttachedRow,
} from './attachments.ts';
/** Organization-level CRUD records (keywords, collaborators ...). */
export { OrganizationRecords, type OrganizationRecordSpec } from './organization-records.ts';
/** Fields, response fields and hooks other plugins contribute to a record kind. */
export { RecordExtensions, type RecordField, type RecordOutput, type RecordHook, type DeleteHook } from './record-extensions.ts';
