import { randomUUID } from 'node:crypto';
import { db, type EntityManager, raw, sql } from '../../core/public.ts';
import { fingerprint } from './bulk.ts';

/** What happens to a record: it is new, it changed since the last run, or it did not. */
export type State = 'created' | 'updated' | 'unchanged';

/** The kinds the report counts, in its order. */
export const KINDS = [
  'users', 'collaborators', 'keywords', 'assayTypes', 'projects', 'projectMembers', 'studies', 'assays',
  'tasks', 'notes', 'externalLinks', 'studyRelationships', 'studyCollections', 'activity',
] as const;
export type Kind = (typeof KINDS)[number];

export interface Report {
  created: Record<Kind, number>;
  updated: Record<Kind, number>;
  unchanged: Record<Kind, number>;
  warnings: { file: string; line: number; message: string }[];
}

export function emptyCounts(): Record<Kind, number> {
  return Object.fromEntries(KINDS.map((k) => [k, 0])) as Record<Kind, number>;
}

/** A map row to write: what a Study Tracker record became, and the fingerprint of what was written. */
export interface MapRow {
  kind: string;
  source_id: string;
  target_id: string;
  fingerprint: string | null;
}

/**
 * The study_tracker_map rows of the organization for the kinds held in memory, with the
 * decision for each record of the export: the record it maps to (a new id when it has none,
 * or when the record it mapped to was deleted here since), and whether it changed.
 */
export class Plans {
  readonly #known = new Map<string, Map<string, { target: string; fingerprint: string | null }>>();
  readonly maps: MapRow[] = [];
  readonly report: Report;

  constructor(report: Report) {
    this.report = report;
  }

  /** Loads the map rows of `kind` whose record still exists in `table`. */
  async load(em: EntityManager, organizationId: string, kind: string, table: string): Promise<void> {
    const rows = await db.query<{ source: string; target: string; fingerprint: string | null }>(
      em,
      sql`select m.source_id as source, m.target_id as target, m.fingerprint from study_tracker_map m
           where m.organization_id = ${organizationId} and m.kind = ${kind}
             and exists (select 1 from ${raw(table)} t where t.id = m.target_id)`,
    );
    this.#known.set(kind, new Map(rows.map((r) => [r.source, { target: r.target, fingerprint: r.fingerprint }])));
  }

  /** The target of a record already mapped (and still there), if any. */
  target(kind: string, source: string | number): string | undefined {
    return this.#known.get(kind)?.get(String(source))?.target;
  }

  /**
   * Decides a record: its id here, and its state; counts it under `counted`; queues its map
   * row unless it is unchanged. `value` is what would be written (its fingerprint is kept).
   */
  decide(kind: string, counted: Kind, source: string | number, value: unknown, newId?: string): { id: string; state: State } {
    const known = this.#known.get(kind)?.get(String(source));
    const fp = fingerprint(value);
    const state: State = !known ? 'created' : known.fingerprint === fp ? 'unchanged' : 'updated';
    const id = known?.target ?? newId ?? randomUUID();
    this.report[state][counted]++;
    if (state !== 'unchanged') this.maps.push({ kind, source_id: String(source), target_id: id, fingerprint: fp });
    return { id, state };
  }
}
