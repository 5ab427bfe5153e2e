import { Type, type TObject, type TSchema } from '@sinclair/typebox';
import type { OperationContext, PageResult } from './kernel/operations.ts';
import { defineRead, defineWrite } from './kernel/operations.ts';
import type { RegisterContext, SetupContext } from './kernel/plugin.ts';
import type { EntitySchema } from '@mikro-orm/core';
import { queryOne, sql, type Sql } from './db/sql.ts';
import type { RecordExtensions } from './kernel/record-extensions.ts';
import type { PageRequest, SortSpec } from './pagination/index.ts';
import { archiveWrite, statusWrite, type LifecycleStatus } from './lifecycle.ts';
// Temporary: records.ts moves to lib/records (records helper), where a plugin wires provisioning in.
import { provisioning, retryInitializationWrite } from '../lib/integrations/index.ts';
import { IdParams, Uuid } from './schemas.ts';
import { withArticle } from './text.ts';

/** What a lifecycle record plugin's service offers (projects, studies, assays). */
export interface LifecycleRecordService<Dto> {
  extensions: RecordExtensions<any>;
  list(ctx: OperationContext, page: PageRequest, parentId?: string): Promise<PageResult<Dto>>;
  get(ctx: OperationContext, id: string): Promise<Dto>;
  create(ctx: OperationContext, body: Record<string, unknown>): Promise<Dto>;
  update(ctx: OperationContext, id: string, body: Record<string, unknown>): Promise<Dto>;
  setStatus(ctx: OperationContext, id: string, status: LifecycleStatus): Promise<Dto>;
  setArchived(ctx: OperationContext, id: string, archived: boolean): Promise<Dto>;
  retryInitialization(ctx: OperationContext, id: string): Promise<Dto>;
  move?(ctx: OperationContext, id: string, parentId: string): Promise<Dto>;
  delete(ctx: OperationContext, id: string): Promise<void>;
}

export interface LifecycleRecordOptions<Dto> {
  /** Singular and plural nouns: `study`, `studies` (the collection path is `/<plural>`). */
  kind: string;
  plural: string;
  tags: string[];
  /** The response schema (contributed output fields included). */
  response: TSchema;
  sort: SortSpec;
  createBody: TObject;
  updateBody: TObject;
  service: LifecycleRecordService<Dto>;
  /** The parent collection, for `GET /<parent>/{parentId}/<plural>` and `PATCH …/move`. */
  parent?: { kind: string; plural: string; field: string };
  /** Descriptions that say more than the defaults. */
  describe?: { list?: string; create?: string; update?: string; delete?: string };
}

/**
 * Declares the operations projects, studies and assays share, from one description: list
 * (and list by parent), get, create, update, status, archive, retry-initialization, move and
 * delete, with the spec's tool names (`list_<plural>`, `list_<plural>_by_<parent>`, `get_<kind>`).
 */
export function registerLifecycleRecord<Dto>(ctx: RegisterContext, o: LifecycleRecordOptions<Dto>): void {
  const { kind, plural, tags, response, service } = o;
  const base = `/${plural}`;
  const { extensions } = service;
  ctx.read(
    defineRead({
      name: `list_${plural}`,
      description: o.describe?.list ?? `List the ${plural} the caller may view.`,
      path: base,
      tags,
      response,
      paged: { sort: o.sort },
      run: (c, _input, page) => service.list(c, page),
    }),
  );
  if (o.parent) {
    const param = `${o.parent.kind}Id`;
    ctx.read(
      defineRead({
        name: `list_${plural}_by_${o.parent.kind}`,
        description: `List the ${plural} of one ${o.parent.kind}.`,
        path: `/${o.parent.plural}/:${param}/${plural}`,
        tags,
        params: Type.Object({ [param]: Uuid() }),
        response,
        paged: { sort: o.sort },
        run: (c, params, page) => service.list(c, page, String((params as Record<string, unknown>)[param])),
      }),
    );
  }
  ctx.read(
    defineRead({
      name: `get_${kind}`,
      description: `Get one ${kind} by id.`,
      path: `${base}/:id`,
      tags,
      params: IdParams,
      response,
      run: (c, { id }) => service.get(c, id),
    }),
  );
  ctx.write(
    defineWrite({
      method: 'POST',
      operationId: `create_${kind}`,
      description: o.describe?.create ?? `Create ${withArticle(kind)}.`,
      path: base,
      tags,
      body: o.createBody,
      status: 201,
      errors: o.parent ? [403] : [],
      response,
      preValidate: (body) => extensions.rejectUnavailable(body),
      run: (c, { body }) => service.create(c, body as Record<string, unknown>),
    }),
  );
  ctx.write(
    defineWrite({
      method: 'PUT',
      operationId: `update_${kind}`,
      description: o.describe?.update ?? `Update ${withArticle(kind)} (omitted fields keep their value). Contributors only.`,
      path: `${base}/:id`,
      tags,
      params: IdParams,
      body: o.updateBody,
      status: 200,
      errors: [403],
      response,
      preValidate: (body) => extensions.rejectUnavailable(body),
      run: (c, { params, body }) => service.update(c, params.id, body as Record<string, unknown>),
    }),
  );
  const lifecycle = { kind, base, tags, response };
  ctx.write(statusWrite(lifecycle, (c, id, status) => service.setStatus(c, id, status)));
  ctx.write(retryInitializationWrite(lifecycle, (c, id) => service.retryInitialization(c, id)));
  ctx.write(archiveWrite(lifecycle, (c, id, archived) => service.setArchived(c, id, archived)));
  if (o.parent && service.move) {
    const { field } = o.parent;
    const move = service.move.bind(service);
    ctx.write(
      defineWrite({
        method: 'PATCH',
        operationId: `move_${kind}`,
        description: `Move ${withArticle(kind)} to another ${o.parent.kind}. Contributor on both.`,
        path: `${base}/:id/move`,
        tags,
        params: IdParams,
        body: Type.Object({ [field]: Uuid({ description: `Target ${o.parent.kind}; the caller must contribute to both` }) }),
        status: 200,
        errors: [403],
        response,
        run: (c, { params, body }) => move(c, params.id, String((body as Record<string, unknown>)[field])),
      }),
    );
  }
  ctx.write(
    defineWrite({
      method: 'DELETE',
      operationId: `delete_${kind}`,
      description: o.describe?.delete ?? `Delete ${withArticle(kind)}. Contributors only.`,
      path: `${base}/:id`,
      tags,
      params: IdParams,
      status: 204,
      errors: [403],
      run: (c, { params }) => service.delete(c, params.id),
    }),
  );
}

/** Where a record sits and what the actor may do with it (for a parent check). */
export interface RecordPlace {
  projectId: string;
  studyId: string | null;
  canContribute: boolean;
}

export interface RecordKindOptions<R extends { id: string }> {
  /** `project`, `study`, `assay`; `plural` is its path segment. */
  kind: string;
  plural: string;
  label: string;
  table: string;
  entity: EntitySchema<any, any>;
  extensions: RecordExtensions<R>;
  /**
   * SQL selecting the record's `"projectId"` and `"studyId"` (null where it has none) by id. The
   * one description of where a record sits: parent visibility joins and provisioning use it.
   */
  locate: (id: Sql) => Sql;
  /** The record as the actor sees it: 404 naming it when not viewable. */
  access: (ctx: OperationContext, id: string) => Promise<RecordPlace>;
  /**
   * SQL condition: the actor may view the record with id `id`. A per-row probe: end its
   * subquery with `offset 0`, or PostgreSQL may hash it over the whole table for a long list.
   */
  visible: (ctx: OperationContext, id: Sql) => Sql;
}

/**
 * Registers a lifecycle record kind with the kernel in `setup`: as a parent other records attach
 * to (tasks, links, notes, folders, activity feeds) and as a kind that provisioning moves through
 * INITIALIZING. Both registrations come from the same `locate`/`access` description.
 */
export function registerRecordKind<R extends { id: string }>(ctx: SetupContext, o: RecordKindOptions<R>): void {
  const { kind } = o;
  const ids = (id: string, place: { projectId: string; studyId: string | null }) => ({
    projectId: place.projectId,
    studyId: kind === 'study' ? id : place.studyId,
    assayId: kind === 'assay' ? id : null,
  });
  ctx.services.parents.register(ctx.plugin, {
    kind,
    segment: o.plural,
    label: o.label,
    access: async (op, id) => {
      const place = await o.access(op, id);
      return { kind, id, ...ids(id, place), canContribute: place.canContribute };
    },
    projectIdOf: (id) => sql`(select l."projectId" from (${o.locate(id)}) l)`,
    visible: o.visible,
    beforeDelete: (hook) => o.extensions.beforeDelete((op, records) => hook(op, records.map((r) => r.id))),
  });
  // Activity entries that name such a record show only to callers who may view it.
  ctx.services.activity.reference(ctx.plugin, kind, o.visible);
  provisioning(ctx.services).registerKind(ctx.plugin, {
    kind,
    table: o.table,
    entity: o.entity,
    scope: async (em, id) => {
      const place = await queryOne<{ projectId: string; studyId: string | null }>(em, o.locate(sql`${id}::uuid`));
      return place && ids(id, place);
    },
  });
}
