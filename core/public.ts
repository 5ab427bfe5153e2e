/**
 * The public plugin API: everything a plugin (built-in or third-party) may import from the
 * kernel. Third parties import it as `labdata/plugin-api`.
 */
export { definePlugin, type PluginDefinition, type SetupContext, type RegisterContext, type BootstrapContext, type BootstrapSection } from './kernel/plugin.ts';
export { AdminError as BootstrapError } from './cli/admin.ts';
export { createExtensionPoint, type ExtensionPoint } from './kernel/extension-points.ts';
export { defineRead, defineWrite, withStatus, StatusResult, type OperationContext, type ReadDefinition, type WriteDefinition, type PageResult } from './kernel/operations.ts';
export type { KernelServices } from './kernel/services.ts';
export type { Actor } from './auth/api-keys.ts';
export { ADMIN_ROLE } from './auth/api-keys.ts';
export { HttpError, ValidationError, BadRequestError, ForbiddenError, NotFoundError, ConflictError, VersionConflictError, type FieldError } from './errors.ts';
export { sql, raw, join, query, queryOne, isoDate, Sql } from './db/sql.ts';
export type { MigrationDefinition } from './db/orm.ts';
export { writeTransaction, RestartTransaction } from './db/transaction.ts';
export { lockRows, lockLocated, lockChildren, LOCK_ORDER, type RowLock, type LockTable } from './db/locks.ts';
export { classTotal, recordTotal, visibleTotal, OPEN_CLASSES, NIL_ACTOR, type CounterSource, type CounterService } from './counters/index.ts';
export { fetchPage, pageSchema, type PageRequest, type SortSpec } from './pagination/index.ts';
export { VISIBILITIES, type Visibility, type AccessColumns } from './permissions/index.ts';
export { ACTIVITY_CATEGORIES, type ActivityCategory, type ActivityScope, type ActivityService } from './activity/index.ts';
export { withArticle } from './text.ts';
export { Uuid, NotBlank, Timestamp, DateInput, Nullable, IdParams, StringEnum, parseDateInput } from './schemas.ts';
export { validateInput } from './http/validation.ts';
export type { EntityManager } from '@mikro-orm/postgresql';
export { defineEntity, p } from '@mikro-orm/core';
export { Type, type Static, type TSchema, type TObject } from '@sinclair/typebox';
/** Kernel tables plugins may write through (teams, project access). */
export { Team, TeamMember, ProjectMember, OrganizationUser } from './entities/index.ts';
export { OrganizationUserSchema, organizationUserColumns, toOrganizationUserDto, type OrganizationUserRow, type OrganizationUserDto } from './entities/dto.ts';
export type { JobContext, JobDefinition, EnqueueOptions, JobQueue } from './jobs/index.ts';
export type { SecretBox } from './secrets.ts';
export { creationTime } from './db/timestamps.ts';
