import { type ActivityScope, db, type KernelServices, type OperationContext, raw, type Sql, sql } from '../../core/public.ts';

/**
 * Where a record attached to a parent (note, task, link, folder ...) sits, as the actor sees it:
 * the parent's kind and id, and the ids its activity is scoped by (its ancestors' and its own).
 */
export interface ParentAccess extends ActivityScope {
  kind: string;
  id: string;
  canContribute: boolean;
}

/**
 * A kind of record other records attach to, declared by its owning plugin in `setup`
 * (`defineLifecycleRecord`); attachment plugins build their routes for every registered kind
 * (`/{segment}/{parentId}/tasks` ...) without importing the owners.
 */
export interface ParentKind {
  /** The record kind, as rows store it in `parent_kind`. */
  kind: string;
  /** Path segment of the collection (its plural). */
  segment: string;
  /** Name used in 404 messages. */
  label: string;
  /** Its table; every such table has `id` and `organization_id`. */
  table: string;
  /** The parent as the actor sees it; 404 naming it when not viewable (or another organization's). */
  access(ctx: OperationContext, id: string): Promise<ParentAccess>;
  /** `access` for a write under the parent: its chain locked (its own row in `own` mode) until the commit. */
  lockedAccess(ctx: OperationContext, id: string, own?: db.RowLock['mode']): Promise<ParentAccess>;
  /** SQL condition: the actor may view the parent whose id is `parentId` (tenant scope included). */
  visible(ctx: OperationContext, parentId: Sql): Sql;
  /** Runs `hook` with the ids of parents being deleted, inside the delete transaction (cascade). */
  beforeDelete(hook: (ctx: OperationContext, ids: string[]) => Promise<void>): void;
}

/** The parent kinds of one kernel; registration closes when its start-up ends. */
export class ParentRegistry {
  #kinds = new Map<string, ParentKind & { plugin: string }>();
  #frozen = false;

  register(plugin: string, kind: ParentKind): void {
    if (this.#frozen) throw new Error(`plugin ${plugin} registered parent kind ${kind.kind} after start-up`);
    const existing = this.#kinds.get(kind.kind);
    if (existing) throw new Error(`parent kind ${kind.kind} is registered by both ${existing.plugin} and ${plugin}`);
    this.#kinds.set(kind.kind, { ...kind, plugin });
  }

  get(kind: string): ParentKind | undefined {
    return this.#kinds.get(kind);
  }

  all(): ParentKind[] {
    return [...this.#kinds.values()];
  }

  /**
   * SQL condition: the actor may view the parent of an attached row (columns for its parent kind
   * and id). Evaluated against the current parents, so a moved record takes its attachments along.
   */
  visibleCondition(ctx: OperationContext, kindColumn: Sql, idColumn: Sql): Sql {
    const cases = this.all().map((k) => sql`when ${k.kind} then ${k.visible(ctx, idColumn)}`);
    if (cases.length === 0) return raw('false');
    return sql`(case ${kindColumn} ${db.join(cases, ' ')} else false end)`;
  }

  freeze(): void {
    this.#frozen = true;
  }
}

/**
 * A page of records under one parent in one round trip: `list` puts the condition "the actor may
 * view the parent" into its page query (`where`) and its total (`total(t)`, which reads -1 when
 * the parent is not viewable). Only then does the parent's own check run, for its precise 404;
 * should the parent have become viewable in between, the page is read again unguarded.
 */
export async function listUnder<T>(
  ctx: OperationContext,
  parent: Pick<ParentKind, 'access' | 'visible'>,
  id: string,
  list: (guard: { where: Sql; total: (total: Sql) => Sql }) => Promise<{ items: T[]; total: number }>,
): Promise<{ items: T[]; total: number }> {
  const visible = parent.visible(ctx, sql`${id}`);
  const page = await list({ where: visible, total: (total) => sql`(case when ${visible} then ${total} else -1 end)` });
  if (page.total >= 0) return page;
  await parent.access(ctx, id);
  return list({ where: raw('true'), total: (total) => total });
}

// One registry per kernel (two kernels in one process, as tests run them, never share one).
const registries = new WeakMap<KernelServices, ParentRegistry>();

/** The parent kinds registered in this kernel (what records attach to). */
export function parentKinds(services: KernelServices): ParentRegistry {
  let registry = registries.get(services);
  if (!registry) {
    const created = (registry = new ParentRegistry());
    registries.set(services, created);
    services.startup.onEnded(() => created.freeze());
  }
  return registry;
}
