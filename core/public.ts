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
/** SQL as tagged templates (always parameterised), and raw SQL text (never a value). */
export { sql, raw, Sql } from './db/sql.ts';
/** Keyset pagination of a list read. */
export { fetchPage, type PageRequest, type SortSpec } from './pagination/index.ts';
/** Record visibility and the access columns permission checks read. */
export { VISIBILITIES, type Visibility, type AccessColumns } from './permissions/index.ts';
/** The categories of activity events, and the records an event belongs to. */
export { ACTIVITY_CATEGORIES, type ActivityCategory, type ActivityScope } from './activity/index.ts';
/** "a study", "an assay": messages that name a record kind. */
export { withArticle } from './text.ts';
/** The ORM's EntityManager: re-exported so a third-party plugin shares the kernel's copy. */
export type { EntityManager } from '@mikro-orm/postgresql';
/** MikroORM entity definitions (the kernel's copy: entities must come from the ORM that loads them). */
export { defineEntity, p } from '@mikro-orm/core';
/** TypeBox, the schema language of every operation (the kernel's copy). */
export { Type, type Static, type TSchema, type TObject } from '@sinclair/typebox';
/** Errors an operation throws; the server turns them into the spec's error responses. */
export * as errors from './api/errors.ts';
/** Running SQL, the retrying write transaction, row locks in the global order, migrations. */
export * as db from './api/db.ts';
/** Schema building blocks shared by every plugin's request and response schemas. */
export * as schemas from './api/schemas.ts';
/** Exact page totals kept by triggers: the SQL that reads them, and a plugin's part of a recount. */
export * as counters from './api/counters.ts';
/** The kernel's tables plugins use (teams, project access, users) and how users are shown. */
export * as tables from './api/tables.ts';
