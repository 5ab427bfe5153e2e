import { defineRead, defineWrite, type ReadDefinition, schemas, type SortSpec, type TObject, type TSchema, Type, withArticle, type WriteDefinition } from '../../core/public.ts';
import { archiveWrite, statusWrite } from './lifecycle.ts';
import { parentKinds } from './parents.ts';
import { idField, type LifecycleRecords } from './records.ts';

/** What the manifest says about a lifecycle record's operations (the rest comes from its declaration). */
export interface LifecycleOperationOptions {
  tags: string[];
  /** The response schema, given the output fields other plugins contribute. */
  response: (contributed: Record<string, TSchema>) => TSchema;
  sort: SortSpec;
  /** The create and update bodies, given the body fields other plugins contribute. */
  createBody: (contributed: Record<string, TSchema>) => TObject;
  updateBody: (contributed: Record<string, TSchema>) => TObject;
  /** Descriptions that say more than the defaults. */
  describe?: { list?: string; create?: string; update?: string; delete?: string };
}

/**
 * The operations every lifecycle record kind has, as definitions for the manifest to register:
 * list (and list by parent), get, create, update, status, retry-initialization, archive, move
 * and delete, with the spec's tool names (`list_<plural>`, `list_<plural>_by_<parent>`, `get_<kind>`).
 */
export function lifecycleOperations(records: LifecycleRecords<any, any, any, any>, o: LifecycleOperationOptions): { reads: ReadDefinition[]; writes: WriteDefinition[] } {
  const { kind, plural, parent, initializing } = records.d;
  const { tags, extensions } = { ...o, extensions: records.extensions };
  const response = o.response(extensions.outputProperties());
  const createBody = o.createBody(extensions.bodyProperties('create'));
  const updateBody = o.updateBody(extensions.bodyProperties('update'));
  const base = `/${plural}`;
  const parentSegment = parent && parentKinds(records.services).get(parent.kind)!.segment;
  const reads: ReadDefinition[] = [
    defineRead({
      name: `list_${plural}`,
      description: o.describe?.list ?? `List the ${plural} the caller may view.`,
      path: base,
      tags,
      response,
      paged: { sort: o.sort },
      run: (c, _input, page) => records.list(c, page),
    }),
  ];
  if (parent) {
    const param = idField(parent.kind);
    reads.push(
      defineRead({
        name: `list_${plural}_by_${parent.kind}`,
        description: `List the ${plural} of one ${parent.kind}.`,
        path: `/${parentSegment}/:${param}/${plural}`,
        tags,
        params: Type.Object({ [param]: schemas.Uuid() }),
        response,
        paged: { sort: o.sort },
        run: (c, params, page) => records.list(c, page, String((params as Record<string, unknown>)[param])),
      }),
    );
  }
  reads.push(
    defineRead({
      name: `get_${kind}`,
      description: `Get one ${kind} by id.`,
      path: `${base}/:id`,
      tags,
      params: schemas.IdParams,
      response,
      run: (c, { id }) => records.get(c, id),
    }),
  );
  const writes: WriteDefinition[] = [
    defineWrite({
      method: 'POST',
      operationId: `create_${kind}`,
      description: o.describe?.create ?? `Create ${withArticle(kind)}.`,
      path: base,
      tags,
      body: createBody,
      status: 201,
      errors: parent ? [403] : [],
      response,
      preValidate: (body) => extensions.rejectUnavailable(body),
      run: (c, { body }) => records.create(c, body as Record<string, unknown>),
    }),
    defineWrite({
      method: 'PUT',
      operationId: `update_${kind}`,
      description: o.describe?.update ?? `Update ${withArticle(kind)} (omitted fields keep their value). Contributors only.`,
      path: `${base}/:id`,
      tags,
      params: schemas.IdParams,
      body: updateBody,
      status: 200,
      errors: [403],
      response,
      preValidate: (body) => extensions.rejectUnavailable(body),
      run: (c, { params, body }) => records.update(c, params.id, body as Record<string, unknown>),
    }),
  ];
  const lifecycle = { kind, base, tags, response };
  writes.push(statusWrite(lifecycle, (c, id, status) => records.setStatus(c, id, status)));
  if (initializing) writes.push(initializing.write(lifecycle, (c, id) => records.retryInitialization(c, id)));
  writes.push(archiveWrite(lifecycle, (c, id, archived) => records.setArchived(c, id, archived)));
  if (parent) {
    const { field } = parent;
    writes.push(
      defineWrite({
        method: 'PATCH',
        operationId: `move_${kind}`,
        description: `Move ${withArticle(kind)} to another ${parent.kind}. Contributor on both.`,
        path: `${base}/:id/move`,
        tags,
        params: schemas.IdParams,
        body: Type.Object({ [field]: schemas.Uuid({ description: `Target ${parent.kind}; the caller must contribute to both` }) }),
        status: 200,
        errors: [403],
        response,
        run: (c, { params, body }) => records.move(c, params.id, String((body as Record<string, unknown>)[field])),
      }),
    );
  }
  writes.push(
    defineWrite({
      method: 'DELETE',
      operationId: `delete_${kind}`,
      description: o.describe?.delete ?? `Delete ${withArticle(kind)}. Contributors only.`,
      path: `${base}/:id`,
      tags,
      params: schemas.IdParams,
      status: 204,
      errors: [403],
      run: (c, { params }) => records.delete(c, params.id),
    }),
  );
  return { reads, writes };
}
