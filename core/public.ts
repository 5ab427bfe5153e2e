/**
 * The kernel's public entry point: everything a plugin (built-in or third-party) or a library
 * (lib/*) may import from the kernel. Third parties import it as `labdata/plugin-api`.
 * test/core/public-api.test.ts keeps it small: every name used, every export documented.
 */
/** A plugin's manifest and the contexts its phases get (setup, register, bootstrap sections). */
export { definePlugin, type SetupContext, type BootstrapContext, type BootstrapSection } from './kernel/plugin.ts';
/** Extension points: one plugin provides an implementation in setup, others use it. */
export { createExtensionPoint } from './kernel/extension-points.ts';
/** Operations: one definition serves a REST route and an MCP tool. */
export { defineRead, defineWrite, withStatus, type OperationContext, type ReadDefinition, type WriteDefinition, type PageResult } from './kernel/operations.ts';
/** The services every plugin gets, and a job handler's context. */
export type { KernelServices, JobContext } from './kernel/services.ts';
/** The authenticated caller of an operation. */
export type { Actor } from './auth/api-keys.ts';
/** Errors an operation throws; the kernel turns them into the spec's error responses. */
export { HttpError, BootstrapError, ValidationError, BadRequestError, ForbiddenError, NotFoundError, ConflictError, VersionConflictError, type FieldError } from './errors.ts';
/** SQL as tagged templates (always parameterised) and the helpers that run it. */
export { sql, raw, join, query, queryOne, isoDate, Sql } from './db/sql.ts';
/** A plugin's schema migration (name prefixed with the plugin name). */
export type { MigrationDefinition } from './db/orm.ts';
/** A write transaction that retries on serialization failures and deadlocks. */
export { writeTransaction } from './db/transaction.ts';
/** Row locks taken in the one global order (no deadlocks between writers). */
export { lockLocated, lockChildren, type RowLock, type LockTable } from './db/locks.ts';
/** Exact page totals kept by triggers: the SQL that reads them, and a plugin's part of a recount. */
export { classTotal, recordTotal, visibleTotal, OPEN_CLASSES, type CounterSource } from './counters/index.ts';
/** Keyset pagination of a list read. */
export { fetchPage, type PageRequest, type SortSpec } from './pagination/index.ts';
/** Record visibility and the access columns permission checks read. */
export { VISIBILITIES, type Visibility, type AccessColumns } from './permissions/index.ts';
/** The categories of activity events, and the records an event belongs to. */
export { ACTIVITY_CATEGORIES, type ActivityCategory, type ActivityScope } from './activity/index.ts';
/** "a study", "an assay": messages that name a record kind. */
export { withArticle } from './text.ts';
/** Schema building blocks shared by every plugin's request and response schemas. */
export { Uuid, NotBlank, Timestamp, DateInput, Nullable, IdParams, StringEnum, parseDateInput } from './schemas.ts';
/** Validates a value against a schema, with the error response a request body gets. */
export { validateInput } from './http/validation.ts';
/** The ORM's EntityManager: re-exported so a third-party plugin shares the kernel's copy. */
export type { EntityManager } from '@mikro-orm/postgresql';
/** MikroORM entity definitions (the kernel's copy: entities must come from the ORM that loads them). */
export { defineEntity, p } from '@mikro-orm/core';
/** TypeBox, the schema language of every operation (the kernel's copy). */
export { Type, type Static, type TSchema, type TObject } from '@sinclair/typebox';
/** Kernel tables plugins may write through (teams, project access). */
export { Team, TeamMember, ProjectMember, OrganizationUser } from './entities/index.ts';
/** Users and organization users as every plugin shows them (the kernel owns their tables). */
export { UserSchema, OrganizationUserSchema, organizationUserColumns, toUserDto, toOrganizationUserDto, type OrganizationUserRow } from './entities/dto.ts';
/** Seals and opens stored credentials (`services.secrets`). */
export type { SecretBox } from './secrets.ts';
/** The `onCreate` instant of an entity: `createdAt` and `updatedAt` of a new record are equal. */
export { creationTime } from './db/timestamps.ts';
