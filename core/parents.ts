import type { OperationContext } from './kernel/operations.ts';
import type { Sql } from './db/sql.ts';

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
}
