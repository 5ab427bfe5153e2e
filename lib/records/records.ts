import crypto from 'node:crypto';
import type { EntitySchema } from '@mikro-orm/core';
import {
  type ActivityScope,
  type Actor,
  counters,
  db,
  type EntityManager,
  errors,
  fetchPage,
  type KernelServices,
  type OperationContext,
  type PageRequest,
  type PageResult,
  raw,
  type SetupContext,
  type Sql,
  sql,
  type WriteDefinition,
} from '../../core/public.ts';
import { mergeUpdate, transition, type LifecycleShape, type LifecycleStatus } from './lifecycle.ts';
import { listUnder, parentKinds, type ParentAccess } from './parents.ts';
import type { RecordExtensions } from './record-extensions.ts';

/** How the actor reaches records of a kind aliased `alias`: joins, visibility and contribution conditions. */
export interface RecordAccess {
  join?: Sql;
  visible: Sql;
  contributable: Sql;
}

/**
 * What moves records through INITIALIZING after their creation (provisioning), supplied by the
 * plugin from the integration side: the record library does not know who provisions.
 */
export interface InitializingHook {
  /** Registers the kind in `setup`; `scope` says where a record sits (undefined once deleted). */
  register(ctx: SetupContext, kind: { kind: string; table: string; entity: EntitySchema<any, any>; scope(em: EntityManager, id: string): Promise<ActivityScope | undefined> }): void;
  /** Reruns the failed steps of an INITIALIZATION_FAILED record, inside the write transaction. */
  retry(ctx: OperationContext, kind: string, record: { id: string; status: string }): Promise<void>;
  /** The `retry-initialization` write of the kind. */
  write(opts: { kind: string; base: string; tags: string[]; response: any }, run: (ctx: OperationContext, id: string) => Promise<any>): WriteDefinition;
}

/** The entity fields the shared writes touch. */
export interface LifecycleEntity extends LifecycleShape {
  id: string;
  organizationId: string;
}

/**
 * One kind of lifecycle record, as its plugin declares it: names, table, the parent kind it sits
 * in (if any), how the actor sees it, and what is truly the kind's own (its DTO, its creation).
 */
export interface LifecycleRecordDeclaration<E extends LifecycleEntity, Row extends { id: string }, Dto, R extends { id: string }> {
  kind: string;
  plural: string;
  /** Name in 404 messages. */
  label: string;
  table: string;
  /** The alias every query gives the table (`columns`, `access`, sort fields use it). */
  alias: string;
  entity: EntitySchema<any, any>;
  extensions: RecordExtensions<R>;
  /** The parent kind (registered before, by a plugin this one depends on) and the entity field naming it. */
  parent?: { kind: string; field: keyof E & string };
  /**
   * The record is visible exactly when its parent is, within the caller's organization (`access`
   * adds no condition of its own): an activity entry naming it is then checked through its parent.
   */
  visibleAsParent?: boolean;
  /** Select list over `alias`, each column named as its entity property, plus the ancestors' ids. */
  columns: Sql;
  access(services: KernelServices, actor: Actor, alias: string): RecordAccess;
  /** The row locks that pin a record where it is now: its ancestors shared, itself in `mode`. */
  locks(ctx: OperationContext, id: string, mode: db.RowLock['mode']): Promise<db.RowLock[]>;
  /** SQL: how many records the actor may view (the whole list, without a parent filter). */
  total(actor: Actor): Sql;
  toDto(record: E | Row, scope: ActivityScope): Dto;
  /** What extension hooks get (default: the entity). */
  record?(entity: E, scope: ActivityScope): R;
  /** Fields the PUT merges. */
  editable: (keyof E & string)[];
  /** Normalizes a create or update body before anything is locked (dates ...). */
  prepare?(body: Record<string, unknown>): Record<string, unknown>;
  /** Creates the entity (not flushed) in the create transaction, the parent checked and locked. */
  build(ctx: OperationContext, body: Record<string, unknown>, parent?: ParentAccess): Promise<E> | E;
  /** Activity data of `created` and `deleted` entries. */
  created(entity: E): Record<string, unknown>;
  deleted(entity: E): Record<string, unknown>;
  /** The PUT's own part: calls `merge` (the shared rules) where it fits; returns the changed fields. */
  edit?(ctx: OperationContext, entity: E, body: Record<string, unknown>, merge: () => string[], scope: ActivityScope): Promise<string[]> | string[];
  /** Runs in the update transaction after the `updated` entry; `before` is the entity as it was. */
  afterUpdate?(ctx: OperationContext, entity: E, before: Record<string, unknown>, scope: ActivityScope): void;
  /** Runs in the delete transaction after the children went, before the row goes. */
  beforeRemove?(ctx: OperationContext, entity: E): Promise<void>;
  initializing?: InitializingHook;
}

/** The field naming a record of `kind` (`<kind>Id`): path parameters, activity scope. */
export const idField = (kind: string) => `${kind}Id`;
const column = (field: string) => field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
const upperFirst = (s: string) => s[0].toUpperCase() + s.slice(1);

/**
 * The shared implementation of lifecycle records: list (by parent), get, create, update, status,
 * archive, retry-initialization, move, delete and the delete cascade from the parent, each in its
 * write transaction with the kernel's row locks and the activity entries the spec names.
 * Made by `defineLifecycleRecord`.
 */
export class LifecycleRecords<E extends LifecycleEntity, Row extends { id: string }, Dto extends { id: string }, R extends { id: string }> {
  /** The kind's declaration. */
  readonly d: LifecycleRecordDeclaration<E, Row, Dto, R>;
  readonly extensions: RecordExtensions<R>;
  readonly services: KernelServices;
  #selected?: Sql;
  /** The parent kind's records (declared before, by a plugin this one depends on). */
  readonly #parent?: LifecycleRecords<any, any, any, any>;
  /** The ids an activity entry of this kind carries, besides its own: its ancestors'. */
  readonly ancestors: string[];

  constructor(services: KernelServices, d: LifecycleRecordDeclaration<E, Row, Dto, R>) {
    this.d = d;
    this.extensions = d.extensions;
    this.services = services;
    if (d.parent) {
      const entry = parentKinds(services).get(d.parent.kind);
      this.#parent = entry && kinds.get(entry);
      if (!this.#parent) throw new Error(`${d.kind} records sit in ${d.parent.kind} records, which no enabled plugin declares`);
    }
    this.ancestors = this.#parent ? [...this.#parent.ancestors, idField(this.#parent.d.kind)] : [];
  }

  /** The record's columns plus the fields other plugins contribute (one query per read). */
  get #columns(): Sql {
    return (this.#selected ??= sql`${this.d.columns}${this.extensions.outputColumns(raw(`${this.d.alias}.id`))}`);
  }

  /** `from <table> <alias> <joins>` for the actor. */
  #from(ctx: OperationContext, alias = this.d.alias): { from: Sql; visible: Sql; contributable: Sql } {
    const access = this.d.access(ctx.services, ctx.actor, alias);
    return { from: sql`from ${raw(this.d.table)} ${raw(alias)} ${access.join ?? raw('')}`, visible: access.visible, contributable: access.contributable };
  }

  /** Where a record sits: its ancestors' ids (from a row or a located parent) and its own. */
  scope(id: string, ancestors: object): ActivityScope {
    const scope: Record<string, unknown> = {};
    for (const k of parentKinds(this.services).all()) scope[idField(k.kind)] = null;
    for (const field of this.ancestors) scope[field] = (ancestors as Record<string, unknown>)[field] ?? null;
    scope[idField(this.d.kind)] = id;
    return scope as unknown as ActivityScope;
  }

  #record(entity: E, scope: ActivityScope): R {
    return this.d.record ? this.d.record(entity, scope) : (entity as unknown as R);
  }

  async #dtos(ctx: OperationContext, rows: Row[]): Promise<Dto[]> {
    const dtos = rows.map((r) => this.d.toDto(r, this.scope(r.id, r)));
    return this.extensions.decorate(ctx.em, dtos, rows);
  }

  async list(ctx: OperationContext, page: PageRequest, parentId?: string): Promise<PageResult<Dto>> {
    const { from, visible } = this.#from(ctx);
    const read = async (where: Sql, total: Sql) => {
      const { rows, total: n } = await fetchPage<Row>(ctx.em, { columns: this.#columns, from: sql`${from} where ${visible} and ${where}`, total }, page);
      return { items: rows, total: n };
    };
    const parent = this.#parent;
    const field = this.d.parent?.field;
    const { items: rows, total } = parentId && parent && field
      ? await listUnder<Row>(ctx, { access: (c, id) => parent.access(c, id), visible: (c, id) => parent.visibleCondition(c, id) }, parentId, (guard) =>
          read(sql`${guard.where} and ${raw(`${this.d.alias}.${column(field)}`)} = ${parentId}`, guard.total(counters.recordTotal(sql`${parentId}`, this.d.kind))))
      : await read(raw('true'), this.d.total(ctx.actor));
    return { items: await this.#dtos(ctx, rows), total };
  }

  /** The viewable records matching `where` (SQL on the kind's alias), decorated, newest first, unpaged. */
  async visible(ctx: OperationContext, where: Sql): Promise<Dto[]> {
    const { from, visible } = this.#from(ctx);
    const a = this.d.alias;
    const rows = await db.query<Row>(ctx.em, sql`select ${this.#columns} ${from} where ${visible} and ${where} order by ${raw(`${a}.created_at desc, ${a}.id`)}`);
    return this.#dtos(ctx, rows);
  }

  async get(ctx: OperationContext, id: string): Promise<Dto> {
    const [dto] = await this.#dtos(ctx, [await this.#find<Row>(ctx, id, () => this.#columns)]);
    return dto;
  }

  /** Whether the actor may contribute, beside the record's own columns: what an access check needs. */
  #access(ctx: OperationContext, id: string): Promise<Row & { canContribute: boolean }> {
    return this.#find(ctx, id, (contributable) => sql`${this.d.columns}, ${contributable} as "canContribute"`);
  }

  /**
   * `columns` of the record if the actor may view it, else 404. A read asks for no contribution
   * probe: only access checks (parents, writes) select it.
   */
  async #find<T>(ctx: OperationContext, id: string, columns: (contributable: Sql) => Sql, lock?: db.RowLock['mode']): Promise<T> {
    const { from, visible, contributable } = this.#from(ctx);
    const locking = lock ? raw(` for ${lock === 'update' ? 'update' : 'share'} of ${this.d.alias}`) : raw('');
    const row = await db.queryOne<T>(ctx.em, sql`select ${columns(contributable)} ${from} where ${raw(this.d.alias)}.id = ${id} and ${visible}${locking}`);
    if (!row) throw new errors.NotFoundError(this.d.label, id);
    return row;
  }

  /** The record as a parent: 404 naming it when not viewable. */
  async access(ctx: OperationContext, id: string): Promise<ParentAccess> {
    const row = await this.#access(ctx, id);
    return { kind: this.d.kind, id, ...this.scope(id, row), canContribute: row.canContribute };
  }

  /**
   * The record as a parent for a write under it (inside the write transaction), pinned until the
   * commit: its chain locked in the kernel's order (`own` for its own row, shared above), then
   * judged as it is now; 404 when not viewable. A root record's chain is its own row: the lock
   * and the check are one statement (PostgreSQL judges the row as it is once locked), one round
   * trip less on every create under it.
   */
  async lockedAccess(ctx: OperationContext, id: string, own: db.RowLock['mode'] = 'share'): Promise<ParentAccess> {
    if (!this.#parent) {
      const row = await this.#find<Row & { canContribute: boolean }>(ctx, id, (contributable) => sql`${this.d.columns}, ${contributable} as "canContribute"`, own);
      if (own === 'update') await db.recordLocked(ctx.em);
      return { kind: this.d.kind, id, ...this.scope(id, row), canContribute: row.canContribute };
    }
    let access!: ParentAccess;
    await db.lockLocated(ctx.em, ctx.actor.organizationId, async () => chainLocks((access = await this.access(ctx, id)), own));
    return access;
  }

  /**
   * Loads the entity for a write (inside its transaction): takes the record's row locks (and a
   * move target's, shared) in the kernel's lock order; then 404 if not viewable, 403 if not a
   * contributor, judged on the current rows.
   */
  async #forWrite(ctx: OperationContext, id: string, targetParentId?: string): Promise<{ entity: E; scope: ActivityScope }> {
    const parent = this.#parent;
    await db.lockLocated(ctx.em, ctx.actor.organizationId, async () => [
      ...(await this.d.locks(ctx, id, 'update')),
      ...(targetParentId && parent ? await parent.d.locks(ctx, targetParentId, 'share') : []),
    ]);
    const row = await this.#access(ctx, id);
    ctx.services.permissions.assertContributor(row);
    const entity = (await ctx.em.findOneOrFail(this.d.entity, { id, organizationId: ctx.actor.organizationId })) as E;
    return { entity, scope: this.scope(id, row) };
  }

  /** One write of one record: its transaction, the locked entity, the response after the commit. */
  async #write(ctx: OperationContext, id: string, work: (tx: OperationContext, entity: E, scope: ActivityScope) => Promise<ActivityScope | void>, target?: string): Promise<Dto> {
    const { entity, scope } = await db.writeTransaction(ctx.em, async (em) => {
      const tx = { ...ctx, em };
      const found = await this.#forWrite(tx, id, target);
      return { entity: found.entity, scope: (await work(tx, found.entity, found.scope)) ?? found.scope };
    });
    return this.#respond(ctx, entity, scope);
  }

  async #respond(ctx: OperationContext, entity: E, scope: ActivityScope): Promise<Dto> {
    const [dto] = await this.extensions.decorate(ctx.em, [this.d.toDto(entity, scope)]);
    return dto;
  }

  #activity(ctx: OperationContext, event: string, scope: ActivityScope, data: Record<string, unknown>, refers?: { kind: string; id: string }) {
    ctx.services.activity.record(ctx.em, ctx.actor, { eventType: `${this.d.kind}.${event}`, ...scope, data, ...(refers && { refers }) });
  }

  async create(ctx: OperationContext, input: Record<string, unknown>): Promise<Dto> {
    const body = this.d.prepare ? this.d.prepare(input) : input;
    const parent = this.#parent;
    const { entity, scope } = await db.writeTransaction(ctx.em, async (em) => {
      const tx = { ...ctx, em };
      let access: ParentAccess | undefined;
      if (parent && this.d.parent) {
        // The parent must not be deleted or moved between this check and the commit.
        access = await parent.lockedAccess(tx, String(body[this.d.parent.field]));
        ctx.services.permissions.assertContributor(access);
      }
      const e = await this.d.build(tx, body, access);
      // Status is read-only on create as on update (spec: changed only through the status operation).
      if (body.status !== undefined && body.status !== e.status) {
        throw new errors.ValidationError([{ field: 'status', message: `is ${e.status} for a new ${this.d.kind}; change it with POST /${this.d.plural}/{id}/status` }]);
      }
      await em.flush();
      const scope = this.scope(e.id, access ?? {});
      const record = this.#record(e, scope);
      await this.extensions.saveFields(tx, record, input, 'create');
      await this.extensions.runOnCreate(tx, record);
      this.#activity(tx, 'created', scope, this.d.created(e));
      return { entity: e, scope };
    });
    await this.extensions.runAfterCreate(ctx, this.#record(entity, scope));
    return db.readAfterCommit(() => this.#respond(ctx, entity, scope));
  }

  /** PUT: the shared rules (`mergeUpdate`), the kind's own `edit`, the contributed fields. */
  async update(ctx: OperationContext, id: string, input: Record<string, unknown>): Promise<Dto> {
    const body = this.d.prepare ? this.d.prepare(input) : input;
    const { plural } = this.d;
    const readOnly: Record<string, string> = { status: `POST /${plural}/${id}/status` };
    if (this.d.parent) readOnly[this.d.parent.field] = `PATCH /${plural}/${id}/move`;
    return this.#write(ctx, id, async (tx, e, scope) => {
      const before = { ...e } as Record<string, unknown>;
      const merge = () => mergeUpdate(this.d.kind, e, body, this.d.editable, readOnly);
      const changed = this.d.edit ? await this.d.edit(tx, e, input, merge, scope) : merge();
      changed.push(...(await this.extensions.saveFields(tx, this.#record(e, scope), input, 'update')));
      // No record without its change (README, Activity): a PUT that changes nothing records nothing.
      if (changed.length) this.#activity(tx, 'updated', scope, { fields: changed });
      this.d.afterUpdate?.(tx, e, before, scope);
    });
  }

  setStatus(ctx: OperationContext, id: string, status: LifecycleStatus): Promise<Dto> {
    return this.#write(ctx, id, async (tx, e, scope) => {
      const oldStatus = transition(this.d.kind, e, status);
      if (oldStatus) this.#activity(tx, 'status_changed', scope, { oldStatus, newStatus: status });
    });
  }

  /** `POST /<plural>/:id/retry-initialization`: reruns the failed provisioning steps. */
  retryInitialization(ctx: OperationContext, id: string): Promise<Dto> {
    return this.#write(ctx, id, async (tx, e) => {
      await this.d.initializing!.retry(tx, this.d.kind, e);
    });
  }

  setArchived(ctx: OperationContext, id: string, archived: boolean): Promise<Dto> {
    return this.#write(ctx, id, async (tx, e, scope) => {
      if (e.archived === archived) return;
      e.archived = archived;
      this.#activity(tx, 'archived', scope, { archived });
    });
  }

  /** Moves a record to another parent; contributor on both; recorded on both sides; its history goes with it. */
  move(ctx: OperationContext, id: string, targetId: string): Promise<Dto> {
    const { field, kind: parentKind } = this.d.parent!;
    return this.#write(
      ctx,
      id,
      async (tx, e, from) => {
        const current = e as unknown as Record<string, unknown>;
        if (current[field] === targetId) return;
        const target = await this.#parent!.access(tx, targetId);
        tx.services.permissions.assertContributor(target);
        current[field] = targetId;
        const to = this.scope(id, target);
        // Its history goes with it: judged where it is now, not where it was.
        const moved = this.ancestors.map((f) => sql`${raw(column(f))} = ${(to as unknown as Record<string, unknown>)[f] as string}`);
        await db.query(tx.em, sql`update activity set ${db.join(moved)}
          where ${raw(column(idField(this.d.kind)))} = ${id} and organization_id = ${tx.actor.organizationId} and event_type <> ${`${this.d.kind}.moved`}`);
        const fromId = (from as unknown as Record<string, string>)[field];
        const data = { [`from${upperFirst(field)}`]: fromId, [`to${upperFirst(field)}`]: targetId };
        this.#activity(tx, 'moved', from, data, { kind: parentKind, id: targetId });
        this.#activity(tx, 'moved', to, data, { kind: parentKind, id: fromId });
        return to;
      },
      targetId,
    );
  }

  async delete(ctx: OperationContext, id: string): Promise<void> {
    await db.writeTransaction(ctx.em, async (em) => {
      const tx = { ...ctx, em };
      const { entity, scope } = await this.#forWrite(tx, id);
      // Children first (attachments, child records ...), in the same transaction.
      await this.extensions.runBeforeDelete(tx, [this.#record(entity, scope)]);
      await this.d.beforeRemove?.(tx, entity);
      em.remove(entity);
      this.#activity(tx, 'deleted', scope, this.d.deleted(entity));
    });
  }

  /** Cascade from the parents' deletion: the records' own children first, then the records, in one go. */
  async deleteOfParents(ctx: OperationContext, parentIds: string[]): Promise<void> {
    const { alias, table, parent } = this.d;
    // The parents are locked: lock their records as they are now (one moved away is not taken along).
    const ids = await db.lockChildren(ctx.em, ctx.actor.organizationId, table as db.LockTable, sql`${raw(column(parent!.field))} in (${parentIds})`);
    if (!ids.length) return;
    const { from } = this.#from(ctx);
    const rows = await db.query<E & Row>(ctx.em, sql`select ${this.d.columns} ${from} where ${raw(alias)}.id in (${ids})`);
    await this.extensions.runBeforeDelete(ctx, rows.map((r) => this.#record(r, this.scope(r.id, r))));
    await ctx.em.nativeDelete(this.d.entity, { id: { $in: ids } });
  }

  /** SQL condition: the actor may view the record with id `id` (a per-row probe, hence `offset 0`). */
  visibleCondition(ctx: OperationContext, id: Sql): Sql {
    const a = `v${this.d.alias}`;
    const { from, visible } = this.#from(ctx, a);
    return sql`exists (select 1 ${from} where ${raw(a)}.id = ${id} and ${visible} offset 0)`;
  }

  /**
   * Where the record with this id sits, without an actor (provisioning): up the parent chain, one
   * row per level. Undefined once it (or an ancestor) is gone.
   */
  async locate(em: EntityManager, id: string): Promise<ActivityScope | undefined> {
    const parent = this.#parent;
    const up = parent ? raw(column(this.d.parent!.field)) : raw('null');
    const row = await db.queryOne<{ parentId: string | null }>(em, sql`select ${up} as "parentId" from ${raw(this.d.table)} where id = ${id}::uuid`);
    if (!row) return undefined;
    if (!parent) return this.scope(id, {});
    const ancestors = await parent.locate(em, row.parentId!);
    return ancestors && this.scope(id, ancestors);
  }
}

// The declared kinds, by their parent-registry entry (one per kernel through `parentKinds`).
const kinds = new WeakMap<object, LifecycleRecords<any, any, any, any>>();

/**
 * Declares a lifecycle record kind in `setup`: registers it as a parent other records attach to,
 * as a kind activity entries may name, with its initializing hook, and its delete cascade from
 * its parent; closes its extension registry when start-up ends. Returns the records' service;
 * `lifecycleOperations` gives the operation definitions the manifest registers.
 */
export function defineLifecycleRecord<E extends LifecycleEntity, Row extends { id: string }, Dto extends { id: string }, R extends { id: string }>(
  ctx: SetupContext,
  d: LifecycleRecordDeclaration<E, Row, Dto, R>,
): LifecycleRecords<E, Row, Dto, R> {
  const records = new LifecycleRecords(ctx.services, d);
  const registry = parentKinds(ctx.services);
  registry.register(ctx.plugin, {
    kind: d.kind,
    segment: d.plural,
    label: d.label,
    table: d.table,
    access: (op, id) => records.access(op, id),
    lockedAccess: (op, id, own) => records.lockedAccess(op, id, own),
    visible: (op, id) => records.visibleCondition(op, id),
    beforeDelete: (hook) => d.extensions.beforeDelete((op, rs) => hook(op, rs.map((r) => r.id))),
  });
  kinds.set(registry.get(d.kind)!, records);
  // Activity entries that name such a record show only to callers who may view it.
  if (d.parent && d.visibleAsParent) {
    const a = raw(`r${d.alias}`);
    const up = raw(`r${d.alias}.${column(d.parent.field)}`);
    ctx.services.activity.referenceThrough(ctx.plugin, d.kind, d.parent.kind, (op, id) =>
      sql`(select ${up} from ${raw(d.table)} ${a} where ${a}.id = ${id} and ${a}.organization_id = ${op.actor.organizationId})`);
  } else {
    ctx.services.activity.reference(ctx.plugin, d.kind, (op, id) => records.visibleCondition(op, id));
  }
  d.initializing?.register(ctx, { kind: d.kind, table: d.table, entity: d.entity, scope: (em, id) => records.locate(em, id) });
  // Deleting a parent deletes its records (and, through their own hooks, their children).
  if (d.parent) registry.get(d.parent.kind)!.beforeDelete((op, ids) => records.deleteOfParents(op, ids));
  ctx.services.startup.onEnded(() => d.extensions.freeze());
  return records;
}

/**
 * The row locks that pin a record where it is: the rows of its chain (`db.LOCK_ORDER`) shared, its
 * own row in `own` mode (`update` serializes, e.g., the writes of one parent's attachments).
 */
function chainLocks(access: ParentAccess, own: db.RowLock['mode']): db.RowLock[] {
  return db.LOCK_ORDER.flatMap((table) => {
    const id = access[`${table}Id`];
    return id ? [{ table, id, mode: table === access.kind ? own : 'share' }] : [];
  });
}

/** A fresh record id. */
export const newId = (): string => crypto.randomUUID();
