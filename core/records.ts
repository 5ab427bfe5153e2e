import { Type, type TObject, type TSchema } from '@sinclair/typebox';
import type { OperationContext, PageResult } from './kernel/operations.ts';
import { defineRead, defineWrite } from './kernel/operations.ts';
import type { RegisterContext } from './kernel/plugin.ts';
import type { RecordExtensions } from './kernel/record-extensions.ts';
import type { PageRequest, SortSpec } from './pagination/index.ts';
import { archiveWrite, statusWrite, type LifecycleStatus } from './lifecycle.ts';
import { retryInitializationWrite } from './provisioning/index.ts';
import { IdParams, Uuid } from './schemas.ts';

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
      description: o.describe?.create ?? `Create a ${kind}.`,
      path: base,
      tags,
      body: o.createBody,
      status: 201,
      response,
      preValidate: (body) => extensions.rejectUnavailable(body),
      run: (c, { body }) => service.create(c, body as Record<string, unknown>),
    }),
  );
  ctx.write(
    defineWrite({
      method: 'PUT',
      operationId: `update_${kind}`,
      description: o.describe?.update ?? `Update a ${kind} (omitted fields keep their value). Contributors only.`,
      path: `${base}/:id`,
      tags,
      params: IdParams,
      body: o.updateBody,
      status: 200,
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
        description: `Move a ${kind} to another ${o.parent.kind}. Contributor on both.`,
        path: `${base}/:id/move`,
        tags,
        params: IdParams,
        body: Type.Object({ [field]: Uuid({ description: `Target ${o.parent.kind}; the caller must contribute to both` }) }),
        status: 200,
        response,
        run: (c, { params, body }) => move(c, params.id, String((body as Record<string, unknown>)[field])),
      }),
    );
  }
  ctx.write(
    defineWrite({
      method: 'DELETE',
      operationId: `delete_${kind}`,
      description: o.describe?.delete ?? `Delete a ${kind}. Contributors only.`,
      path: `${base}/:id`,
      tags,
      params: IdParams,
      status: 204,
      run: (c, { params }) => service.delete(c, params.id),
    }),
  );
}
