import type { EntityManager } from '@mikro-orm/postgresql';
import type { Actor } from '../auth/api-keys.ts';
import { raw, sql, type Sql } from '../db/sql.ts';
import { writeTransaction } from '../db/transaction.ts';
import { Startup } from '../kernel/startup.ts';

/**
 * Exact page totals without counting rows.
 *
 * Triggers (kernel and plugin migrations `*-counters`) keep two tables in the writing
 * transaction:
 * - `visibility_count`: per organization × kind (`project`, `study`, `assay`, `activity`) ×
 *   visibility class (the project's `PUBLIC`/`PROTECTED`/`PRIVATE`, `NONE` for activity without
 *   a project, `DELETED` for rows of a deleted project) × activity category, once for the whole
 *   organization (`actor_id` = nil) and once per acting user (activity);
 * - `record_count`: per parent record (project, study, assay) × kind × category.
 * Rows are sharded by backend (`pg_backend_pid() % 8`) so concurrent writers do not serialize on
 * one row; a total sums its shards. A caller's total is then the sum over the classes they see,
 * plus, for the PRIVATE class, the per-project counts of the projects they are granted — cost
 * O(the caller's grants), never O(rows).
 *
 * Rows that arrive without the triggers (a restore, a load with triggers disabled) are counted
 * by `labdata recount`, which rebuilds both tables from the data while writers wait.
 */
export const NIL_ACTOR = '00000000-0000-0000-0000-000000000000';

/** A plugin's part of a recount: the tables it reads, and `insert ... select` statements. */
export interface CounterSource {
  plugin: string;
  tables: string[];
  statements: string[];
  /** Statements that derive from the rebuilt counters themselves: run after every source's `statements`. */
  derived?: string[];
}

export type Progress = (step: string, done: number, total: number) => void;

const RECOUNT_ATTEMPTS = 20;

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

  /**
   * Rebuilds every counter from the rows, in one transaction. `share` locks on the counted
   * tables make writers wait (not fail) meanwhile, so the result is exact even while the
   * service runs; running it twice gives the same counts. The locks are taken one table after
   * another, so a writer holding one of them and waiting for another deadlocks with the recount:
   * PostgreSQL then fails one of the two, and either is run again (writers by their own
   * writeTransaction, the recount here, up to RECOUNT_ATTEMPTS times with growing pauses).
   */
  async recount(em: EntityManager, progress: Progress = () => {}): Promise<{ statements: number }> {
    const tables = [...new Set(this.#sources.flatMap((s) => s.tables))].sort();
    const statements = [
      ...this.#sources.flatMap((s) => s.statements.map((text, i) => ({ name: `${s.plugin} ${i + 1}`, text }))),
      ...this.#sources.flatMap((s) => (s.derived ?? []).map((text, i) => ({ name: `${s.plugin} derived ${i + 1}`, text }))),
    ];
    const total = statements.length + 2;
    await writeTransaction(em, async (tx) => {
      progress('lock', 0, total);
      if (tables.length) await tx.execute(`lock table ${tables.join(', ')} in share mode`);
      // Triggers that derive counts from counts stand aside while those are rebuilt.
      await tx.execute(`set local labdata.recount = 'on'`);
      // The rebuild reads whole tables: let it use parallel workers (the service's connections
      // start none, core/db/orm.ts, and that is their session default, so it is named here).
      await tx.execute('set local max_parallel_workers_per_gather = 2');
      await tx.execute('delete from visibility_count');
      await tx.execute('delete from record_count');
      progress('clear', 1, total);
      let done = 1;
      for (const s of statements) {
        await tx.execute(s.text);
        progress(s.name, ++done, total);
      }
    }, { attempts: RECOUNT_ATTEMPTS });
    progress('done', total, total);
    return { statements: statements.length };
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
