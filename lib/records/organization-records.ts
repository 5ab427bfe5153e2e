import crypto from 'node:crypto';
import { LockMode, UniqueConstraintViolationException, type EntitySchema } from '@mikro-orm/core';
import {
  db,
  defineRead,
  defineWrite,
  errors,
  fetchPage,
  type OperationContext,
  type PageRequest,
  raw,
  type ReadDefinition,
  schemas,
  type SortSpec,
  type Sql,
  sql,
  type TObject,
  type TSchema,
  withArticle,
  type WriteDefinition,
} from '../../core/public.ts';
import { mergeUpdate } from './lifecycle.ts';

/**
 * Records that belong to the organization as a whole (keywords, collaborators, ...): no parent
 * record, hence no visibility rule. Every active user of the organization (the only kind an API
 * key authenticates as) views and writes them; a record of another organization is a 404.
 * One implementation of their list/get/create/update/delete, their activity and their REST
 * operations and MCP tools, so such plugins declare only their table, fields and wire schemas.
 */
export interface OrganizationRecordSpec<E extends { id: string }, Dto> {
  /** Singular, lower case (`keyword`): messages, event types `<noun>.created|updated|deleted`, `get_<noun>`. */
  noun: string;
  /** Plural, lower case (`keywords`): the collection path `/<plural>` and the tool `list_<plural>`. */
  plural: string;
  /** The entity; it has `id`, `organizationId` and `createdById` (and `version` if updatable). */
  entity: EntitySchema<any, any>;
  /** SQL table; queries alias it `r`, so `columns` and the sort fields use `r.`. */
  table: string;
  /** Select list over `r`, each column named as its entity property, so rows and entities share `toDto`. */
  columns: Sql;
  toDto(record: E): Dto;
  /** Activity `data` naming the record (e.g. `{ label }`); an update adds `fields` (the changed ones). */
  summary(record: E): Record<string, unknown>;
  /** The 409 message when a write hits one of the table's unique indexes (else the generic one). */
  duplicate?(record: E): string;
}

interface OperationOptions {
  tags: string[];
  /** The record's wire schema. */
  response: TSchema;
}

export class OrganizationRecords<E extends { id: string }, Dto> {
  readonly spec: OrganizationRecordSpec<E, Dto>;
  readonly #kind: string;

  constructor(spec: OrganizationRecordSpec<E, Dto>) {
    this.spec = spec;
    this.#kind = spec.noun[0].toUpperCase() + spec.noun.slice(1);
  }

  async list(ctx: OperationContext, page: PageRequest): Promise<{ items: Dto[]; total: number }> {
    const from = sql`from ${raw(this.spec.table)} r where r.organization_id = ${ctx.actor.organizationId}`;
    const { rows, total } = await fetchPage<E>(ctx.em, { columns: this.spec.columns, from }, page);
    return { items: rows.map((r) => this.spec.toDto(r)), total };
  }

  async get(ctx: OperationContext, id: string): Promise<Dto> {
    const row = await db.queryOne<E>(
      ctx.em,
      sql`select ${this.spec.columns} from ${raw(this.spec.table)} r where r.id = ${id} and r.organization_id = ${ctx.actor.organizationId}`,
    );
    if (!row) throw new errors.NotFoundError(this.#kind, id);
    return this.spec.toDto(row);
  }

  async create(ctx: OperationContext, values: Record<string, unknown>): Promise<Dto> {
    const record = await this.#write(ctx, async (em) => {
      const r = em.create(this.spec.entity, {
        ...values,
        id: crypto.randomUUID(),
        organizationId: ctx.actor.organizationId,
        createdById: ctx.actor.organizationUserId,
      }) as E;
      ctx.services.activity.record(em, ctx.actor, { eventType: `${this.spec.noun}.created`, data: this.spec.summary(r) });
      return r;
    });
    return this.spec.toDto(record);
  }

  /**
   * PUT as lifecycle records do it (`mergeUpdate`): omitted fields keep their value, a stale `version` is
   * a 409. Activity is recorded only when a field actually changed.
   */
  async update(ctx: OperationContext, id: string, body: Record<string, unknown>, editable: (keyof E & string)[]): Promise<Dto> {
    const record = await this.#write(ctx, async (em) => {
      const r = await this.#find(em, ctx, id);
      const fields = mergeUpdate(this.spec.noun, r as E & { version: number }, body, editable, {});
      if (fields.length) {
        ctx.services.activity.record(em, ctx.actor, { eventType: `${this.spec.noun}.updated`, data: { ...this.spec.summary(r), fields } });
      }
      return r;
    });
    return this.spec.toDto(record);
  }

  async delete(ctx: OperationContext, id: string): Promise<void> {
    await this.#write(ctx, async (em) => {
      const r = await this.#find(em, ctx, id);
      em.remove(r);
      ctx.services.activity.record(em, ctx.actor, { eventType: `${this.spec.noun}.deleted`, data: this.spec.summary(r) });
      return r;
    });
  }

  /**
   * The record for a write, its row locked: concurrent writes to it run one after the other, so a
   * second DELETE (or a PUT after a DELETE) finds nothing (404) instead of deleting or recording twice.
   */
  async #find(em: OperationContext['em'], ctx: OperationContext, id: string): Promise<E> {
    const r = await em.findOne(this.spec.entity, { id, organizationId: ctx.actor.organizationId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    await db.recordLocked(em);
    if (!r) throw new errors.NotFoundError(this.#kind, id);
    return r as E;
  }

  /** One transaction for the change and its activity; a unique-index violation names the duplicate. */
  async #write(ctx: OperationContext, work: (em: OperationContext['em']) => Promise<E>): Promise<E> {
    let record: E | undefined;
    try {
      return await db.writeTransaction(ctx.em, async (em) => (record = await work(em)));
    } catch (error) {
      if (error instanceof UniqueConstraintViolationException && record && this.spec.duplicate) {
        throw new errors.ConflictError(this.spec.duplicate(record));
      }
      throw error;
    }
  }

  /** `list_<plural>` (GET /<plural>, paged) and `get_<noun>` (GET /<plural>/:id): REST reads and MCP tools. */
  reads(opts: OperationOptions & { sort: SortSpec }): ReadDefinition[] {
    const { noun, plural } = this.spec;
    return [
      defineRead({
        name: `list_${plural}`,
        description: `List the ${plural} of the caller's organization.`,
        path: `/${plural}`,
        tags: opts.tags,
        response: opts.response,
        paged: { sort: opts.sort },
        run: (c, _input, page) => this.list(c, page) as never,
      }),
      defineRead({
        name: `get_${noun}`,
        description: `Get one ${noun} of the caller's organization by id.`,
        path: `/${plural}/:id`,
        tags: opts.tags,
        params: schemas.IdParams,
        response: opts.response,
        run: (c, { id }) => this.get(c, id) as never,
      }),
    ];
  }

  /** POST /<plural>: `values` turns the validated body into the entity's own fields. */
  createWrite<B extends TObject>(opts: OperationOptions & { body: B; values(body: B['static']): Record<string, unknown> }): WriteDefinition {
    return defineWrite({
      method: 'POST',
      operationId: `create_${this.spec.noun}`,
      description: `Create ${withArticle(this.spec.noun)}. Any user of the organization.`,
      path: `/${this.spec.plural}`,
      tags: opts.tags,
      body: opts.body,
      status: 201,
      errors: this.spec.duplicate ? [409] : [],
      response: opts.response,
      run: (c, { body }) => this.create(c, opts.values(body)) as never,
    });
  }

  /** PUT /<plural>/:id, merging the `editable` fields given (see `update`). */
  updateWrite(opts: OperationOptions & { body: TObject; editable: (keyof E & string)[] }): WriteDefinition {
    return defineWrite({
      method: 'PUT',
      operationId: `update_${this.spec.noun}`,
      description: `Update ${withArticle(this.spec.noun)} (omitted fields keep their value). Any user of the organization.`,
      path: `/${this.spec.plural}/:id`,
      tags: opts.tags,
      params: schemas.IdParams,
      body: opts.body,
      status: 200,
      errors: this.spec.duplicate ? [409] : [],
      response: opts.response,
      run: (c, { params, body }) => this.update(c, params.id, body as Record<string, unknown>, opts.editable) as never,
    });
  }

  /** DELETE /<plural>/:id, 204. */
  deleteWrite(opts: { tags: string[] }): WriteDefinition {
    return defineWrite({
      method: 'DELETE',
      operationId: `delete_${this.spec.noun}`,
      description: `Delete ${withArticle(this.spec.noun)}. Any user of the organization.`,
      path: `/${this.spec.plural}/:id`,
      tags: opts.tags,
      params: schemas.IdParams,
      status: 204,
      run: (c, { params }) => this.delete(c, params.id),
    });
  }
}
