import { IsolationLevel, type EntityManager } from '@mikro-orm/postgresql';
import { writeTransaction } from '../../core/db/transaction.ts';
import type { CounterService } from '../../core/counters/index.ts';

/**
 * `labdata recount` (and the runtime, after a counters migration): makes the kernel's and the
 * plugins' counters (core/counters) exact again from the rows, while writers go on.
 */
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
export async function recount(counters: CounterService, em: EntityManager, progress: Progress = () => {}): Promise<{ statements: number; passes: number; corrected: number; repaired: number }> {
  const repairs = counters.sources.flatMap((s) => (s.repairs ?? []).map((text, i) => ({ name: `${s.plugin} repair ${i + 1}`, text })));
  const counts = counters.sources.flatMap((s) => s.statements.map((text, i) => ({ name: `${s.plugin} ${i + 1}`, text })));
  const derived = counters.sources.flatMap((s) => (s.derived ?? []).map((text, i) => ({ name: `${s.plugin} derived ${i + 1}`, text })));
  const statements = [...counts, ...derived];
  const tables = [...KERNEL_COUNTERS, ...counters.sources.flatMap((s) => s.counters ?? [])];
  const passSteps = 1 + statements.length + tables.length;
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
      await tx.execute(`lock table ${tables.join(', ')} in share update exclusive mode`);
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
      for (const table of tables) await tx.execute(`create temp table ${table} (like ${quoted}.${table} including defaults including indexes) on commit drop`);
      for (const s of statements) {
        // Derived counts read the rebuilt ones by key: give the planner their real size first.
        if (s === derived[0]) await tx.execute(`analyze ${tables.map((table) => `pg_temp.${table}`).join(', ')}`);
        progress(s.name, done++, total);
        await tx.execute(s.text);
      }
      let rows = 0;
      for (const table of tables) {
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
