import type { OperationContext } from './kernel/operations.ts';
import { join, raw, sql, type Sql } from './db/sql.ts';

/** Where a record attached to a parent (note, task, link, folder ...) sits, as the actor sees it. */
export interface ParentAccess {
  kind: string;
  id: string;
  projectId: string;
  studyId: string | null;
  assayId: string | null;
  canContribute: boolean;
}

/**
 * A kind of record other records attach to: projects, studies, assays. The owning plugin
 * registers it in `setup`; attachment plugins build their routes for every registered kind
 * (`/{segment}/{parentId}/tasks` ...) without importing the owners.
 */
export interface ParentKind {
  /** `project`, `study`, `assay`. */
  kind: string;
  /** Path segment of the collection: `projects`, `studies`, `assays`. */
  segment: string;
  /** Name used in 404 messages: `Project`. */
  label: string;
  /** The parent as the actor sees it; 404 naming it when not viewable (or another organization's). */
  access(ctx: OperationContext, id: string): Promise<ParentAccess>;
  /** SQL expression for the project id of the parent whose id is `parentId` (for visibility joins). */
  projectIdOf(parentId: Sql): Sql;
  /** SQL condition: the actor may view the parent whose id is `parentId` (tenant scope included). */
  visible(ctx: OperationContext, parentId: Sql): Sql;
  /** Runs `hook` with the ids of parents being deleted, inside the delete transaction (cascade). */
  beforeDelete(hook: (ctx: OperationContext, ids: string[]) => Promise<void>): void;
}

export class ParentRegistry {
  #kinds = new Map<string, ParentKind & { plugin: string }>();

  register(plugin: string, kind: ParentKind): void {
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
   * and id). Evaluated against the current parents, so a moved study takes its attachments along.
   */
  visibleCondition(ctx: OperationContext, kindColumn: Sql, idColumn: Sql): Sql {
    const cases = this.all().map((k) => sql`when ${k.kind} then ${k.visible(ctx, idColumn)}`);
    if (cases.length === 0) return raw('false');
    return sql`(case ${kindColumn} ${join(cases, ' ')} else false end)`;
  }

  /**
   * SQL for the project id of an attached row, from its parent kind and id columns. Always
   * computed from the current parents, so a moved study takes its attachments along.
   */
  projectIdOf(kindColumn: Sql, idColumn: Sql): Sql {
    const cases = this.all().map((k) => sql`when ${k.kind} then ${k.projectIdOf(idColumn)}`);
    if (cases.length === 0) return raw('null::uuid');
    return sql`(case ${kindColumn} ${join(cases, ' ')} end)`;
  }
}
