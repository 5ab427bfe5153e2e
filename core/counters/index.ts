import { IsolationLevel, type EntityManager } from '@mikro-orm/postgresql';
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
 * by `labdata recount`, which corrects every counter from the rows while writers go on.
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

export type Progress = (step: string, done: number, total: number) => void;

const RECOUNT_ATTEMPTS = 20;
/** Passes after which a recount that still finds differences gives up (writers kept moving drifted counts). */
const RECOUNT_PASSES = 5;
/** The shard that holds recount corrections; writers' triggers use 0-7 (`pg_backend_pid() % 8`). */
const CORRECTION_SHARD = 8;
const KERNEL_COUNTERS = ['visibility_count', 'record_count'];

/** Writers kept moving the counts being corrected: the counters are closer, not yet exact. */
export class RecountUnsettled extends Error {
  constructor(passes: number) {
    super(`the counters still differed from the rows after ${passes} passes (writers kept changing what was being corrected): run labdata recount again`);
  }
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

  /**
   * Makes every counter exact again, without stopping writers. A pass counts the rows, in one
   * REPEATABLE READ snapshot, into temporary tables that shadow the counter tables (the
   * sources' SQL runs unchanged), and adds the difference to what the counters say in that same
   * snapshot as correction rows (shard 8, which no trigger writes). Triggers keep counters in
   * the writing transaction, so what commits after the snapshot adds to both sides alike. But a
   * trigger that moves counts it reads from the counters (a visibility change, a move, a grant)
   * moves a drifted count while the pass runs, and the pass's correction then lands under the
   * old class or holder: so passes repeat until one finds nothing to correct. The counters are
   * exact at that pass's snapshot, and triggers keep them exact from there. Writers never wait
   * for it (it locks no row they write); on counters without drift it is one pass that adds
   * nothing. Recounts take turns (a self-conflicting table lock, taken before the snapshot).
   */
  async recount(em: EntityManager, progress: Progress = () => {}): Promise<{ statements: number; passes: number; corrected: number; repaired: number }> {
    const repairs = this.#sources.flatMap((s) => (s.repairs ?? []).map((text, i) => ({ name: `${s.plugin} repair ${i + 1}`, text })));
    const counts = this.#sources.flatMap((s) => s.statements.map((text, i) => ({ name: `${s.plugin} ${i + 1}`, text })));
    const derived = this.#sources.flatMap((s) => (s.derived ?? []).map((text, i) => ({ name: `${s.plugin} derived ${i + 1}`, text })));
    const statements = [...counts, ...derived];
    const counters = [...KERNEL_COUNTERS, ...this.#sources.flatMap((s) => s.counters ?? [])];
    const passSteps = 1 + statements.length + counters.length;
    let total = repairs.length + passSteps;
    let done = 0;
    let repaired = 0; // source rows a repair brought up to date (e.g. a grant's copy of its project's visibility)
    for (const repair of repairs) {
      progress(repair.name, done++, total);
      // Batches, so that the rows a batch locks are held for a moment only.
      const batch = async (tx: EntityManager) => ((await tx.execute(repair.text, [], 'run')) as unknown as { affectedRows: number }).affectedRows;
      let n: number;
      do {
        n = await writeTransaction(em, batch, { attempts: RECOUNT_ATTEMPTS });
        repaired += n;
      } while (n > 0);
    }
    let pass = 0;
    let fixed = 0; // counter rows that differed, over all passes: what the operator asks "was it needed?"
    for (let corrected = -1; corrected !== 0; ) {
      if (++pass > RECOUNT_PASSES) throw new RecountUnsettled(RECOUNT_PASSES);
      if (pass > 1) total += passSteps;
      const started = done;
      corrected = await writeTransaction(em, async (tx) => {
        done = started;
        progress(pass === 1 ? 'snapshot' : `snapshot (pass ${pass})`, done++, total);
        // SHARE UPDATE EXCLUSIVE conflicts with itself, not with writers' ROW EXCLUSIVE; LOCK takes
        // no snapshot, so a recount that waited here sees the corrections of the one before it.
        await tx.execute(`lock table ${counters.join(', ')} in share update exclusive mode`);
        const [{ schema }] = await tx.execute<{ schema: string }[]>('select current_schema() as schema');
        const quoted = `"${schema.replace(/"/g, '""')}"`;
        // Temporary tables first, whatever the role's search_path says: the sources' statements fill them.
        await tx.execute(`set local search_path to pg_temp, ${quoted}`);
        // The trigger that passes count changes on to grant holders stands aside: their
        // corrections are computed here like every other table's.
        await tx.execute(`set local labdata.recount = 'on'`);
        // The rebuild reads whole tables: let it use parallel workers (the service's connections
        // start none, core/db/orm.ts, and that is their session default, so it is named here).
        await tx.execute('set local max_parallel_workers_per_gather = 2');
        for (const table of counters) await tx.execute(`create temp table ${table} (like ${quoted}.${table} including defaults including indexes) on commit drop`);
        for (const s of statements) {
          // Derived counts read the rebuilt ones by key: give the planner their real size first.
          if (s === derived[0]) await tx.execute(`analyze ${counters.map((table) => `pg_temp.${table}`).join(', ')}`);
          progress(s.name, done++, total);
          await tx.execute(s.text);
        }
        let rows = 0;
        for (const table of counters) {
          progress(`correct ${table}`, done++, total);
          const [{ n }] = await tx.execute<{ n: number }[]>(await correction(tx, quoted, table));
          rows += n;
        }
        return rows;
      }, { attempts: RECOUNT_ATTEMPTS, isolationLevel: IsolationLevel.REPEATABLE_READ });
      fixed += corrected;
    }
    progress('done', total, total);
    return { statements: repairs.length + statements.length, passes: pass, corrected: fixed, repaired };
  }
}

/** Adds (rows counted) − (counters) per key of `table`, where they differ, to its correction shard; selects how many keys. */
async function correction(tx: EntityManager, schema: string, table: string): Promise<string> {
  const columns = await tx.execute<{ name: string }[]>(
    `select a.attname as name from pg_index i join pg_attribute a on a.attrelid = i.indrelid and a.attnum = any (i.indkey)
      where i.indrelid = '${`${schema}.${table}`.replace(/'/g, "''")}'::regclass and i.indisprimary order by a.attnum`,
  );
  const keys = columns.map((c) => c.name).filter((name) => name !== 'shard').join(', ');
  return `with corrected as (
    insert into ${schema}.${table} as c (${keys}, shard, n)
    select ${keys}, ${CORRECTION_SHARD}, sum(n) from (
      select ${keys}, n from pg_temp.${table} union all select ${keys}, -n from ${schema}.${table}) x
    group by ${keys} having sum(n) <> 0
    on conflict (${keys}, shard) do update set n = c.n + excluded.n
    returning 1)
  select count(*)::int as n from corrected`;
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
