import type { Actor } from '../auth/api-keys.ts';
import { raw, sql, type Sql } from '../db/sql.ts';
import { Startup } from '../kernel/startup.ts';

/**
 * Exact page totals without counting rows. Statement-level triggers (plugin migrations) keep two
 * tables in the writing transaction, adding to each counter row once per statement:
 * `visibility_count`, per organization × kind (`project`, `study`, `assay`, `activity`) ×
 * visibility class (the project's visibility, `NONE` for activity without a project, `DELETED`
 * for rows of a deleted project) × activity category, for the whole organization (`actor_id` =
 * nil) and per acting user (activity); and `record_count`, per parent record × kind × category.
 * Rows are sharded by backend (`pg_backend_pid() % 8`) so concurrent writers do not serialize on
 * one row. A caller's total sums the classes they see, plus, for PRIVATE, the counts of the
 * projects they are granted: O(the caller's grants), never O(rows). Rows that arrive without the
 * triggers (a restore, a load with triggers off) are counted by `labdata recount` (app/db/recount.ts).
 */
export const NIL_ACTOR = '00000000-0000-0000-0000-000000000000';

/** A plugin's part of a recount: statements that count its rows into the counter tables. */
export interface CounterSource {
  plugin: string;
  /** `insert ... select` statements filling the counter tables (the kernel's and `counters`) from the rows. */
  statements: string[];
  /** Statements that derive from the rebuilt counters themselves: run after every source's `statements`. */
  derived?: string[];
  /**
   * Counter tables of the plugin's own (primary key: its keys and `shard`; count `n`) that its
   * statements fill. The recount never writes a counter table directly: a table not named here
   * would be written inside its long snapshot.
   */
  counters?: string[];
  /**
   * Updates that mend denormalized columns of the data itself, a batch at a time: each runs in
   * short transactions of its own, again and again until it changes no row.
   */
  repairs?: string[];
}

export class CounterService {
  #sources: CounterSource[] = [];
  #startup: Startup;

  /** Registrations throw once `startup` has ended (a service of its own, in tests, never freezes). */
  constructor(startup = new Startup()) {
    this.#startup = startup;
  }

  register(source: CounterSource): void {
    this.#startup.assertOpen(`counters of ${source.plugin}`);
    this.#sources.push(source);
  }

  /** What `labdata recount` counts (app/db/recount.ts), in the order the plugins registered it. */
  get sources(): readonly CounterSource[] {
    return this.#sources;
  }

}

/** `(select sum ...)` of an organization's counts of `kind` in the given classes (all when omitted). */
export function classTotal(
  organizationId: string,
  kind: string,
  opts: { classes?: readonly string[]; categories?: readonly string[]; actorId?: string } = {},
): Sql {
  const classes = opts.classes ? sql` and class in (${[...opts.classes]})` : raw('');
  const categories = opts.categories ? sql` and category in (${[...opts.categories]})` : raw('');
  return sql`(select coalesce(sum(n), 0) from visibility_count
    where organization_id = ${organizationId} and kind = ${kind} and actor_id = ${opts.actorId ?? NIL_ACTOR}${categories}${classes})`;
}

/** `(select sum ...)` of the counts of `kind` under the parent records `ids` (an SQL list or subquery). */
export function recordTotal(ids: Sql, kind: string, categories?: readonly string[]): Sql {
  const byCategory = categories ? sql` and category in (${[...categories]})` : raw('');
  return sql`(select coalesce(sum(n), 0) from record_count where record_id in (${ids}) and kind = ${kind}${byCategory})`;
}

/** The classes every organization user sees without a grant (README, permission rules). */
export const OPEN_CLASSES = ['PUBLIC', 'PROTECTED'] as const;

/** The total of `kind` the actor may view, given the total of it in the PRIVATE projects they are granted. */
export function visibleTotal(actor: Actor, kind: string, privateTotal: Sql, categories?: readonly string[]): Sql {
  if (actor.isAdmin) return classTotal(actor.organizationId, kind, { categories });
  return sql`(${classTotal(actor.organizationId, kind, { classes: OPEN_CLASSES, categories })}
    + ${privateTotal})`;
}
