import crypto from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Actor } from '../auth/api-keys.ts';
import { join, raw, sql, type Sql } from '../db/sql.ts';
import { Startup } from '../kernel/startup.ts';

export const ACTIVITY_CATEGORIES = ['RESEARCH', 'GOVERNANCE', 'ADMINISTRATIVE'] as const;
export type ActivityCategory = (typeof ACTIVITY_CATEGORIES)[number];

/** The records an activity entry is scoped by (project always; study and assay when inside one). */
export interface ActivityScope {
  projectId: string;
  studyId: string | null;
  assayId: string | null;
}

export interface ActivityInput {
  eventType: string;
  data?: Record<string, unknown>;
  projectId?: string | null;
  studyId?: string | null;
  assayId?: string | null;
  /** One more record the entry names (kind registered with `reference`): it shows only to callers who may view that one too. */
  refers?: { kind: string; id: string };
}

/** SQL condition: the caller may view the record of this kind whose id is `id` (tenant scope included). */
export type ReferenceCheck<C> = (ctx: C, id: Sql) => Sql;

/** Entries recorded on a transaction's EntityManager, not yet written (`writeRecorded`). */
const recorded = new WeakMap<EntityManager, unknown[][]>();

const COLUMNS = 'id, organization_id, event_type, category, data, date, project_id, study_id, assay_id, organization_user_id, ref_kind, ref_id';

/**
 * Writes the entries recorded on `em`, when it flushes (core/db/orm.ts runs this after every
 * flush): after the change they record, last before the commit. An entry's insert moves the
 * counters every writer of the organization adds to (core/counters), so it holds their rows
 * for the shortest time; and it is one statement however many entries the write recorded.
 */
export async function writeRecorded(em: EntityManager): Promise<void> {
  const rows = recorded.get(em);
  if (!rows?.length) return;
  recorded.delete(em);
  const values = rows.map(() => '(?, ?, ?, ?, ?::jsonb, ?, ?, ?, ?, ?, ?, ?)').join(', ');
  await em.execute(`insert into activity (${COLUMNS}) values ${values}`, rows.flat());
}

/**
 * Records activity. Call it with the EntityManager of the change's own transaction: the record
 * is written by that transaction's flush, so there is never one without the other. `C` is the operation
 * context (OperationContext): a parameter, so that this module does not import the kernel
 * services that hold it (no import circle).
 */
export class ActivityService<C extends { actor: Actor } = { actor: Actor }> {
  #startup: Startup;

  /** Registrations throw once `startup` has ended (a queue of its own, in tests, never freezes). */
  constructor(startup = new Startup()) {
    this.#startup = startup;
  }

  #categories = new Map<string, { category: ActivityCategory; plugin: string }>();

  /** Plugins declare their event types (and categories) at start-up. */
  declare(plugin: string, events: Record<string, ActivityCategory>): void {
    this.#startup.assertOpen(`event types of ${plugin}`);
    for (const [eventType, category] of Object.entries(events)) {
      const existing = this.#categories.get(eventType);
      if (existing) throw new Error(`event type ${eventType} is declared by both ${existing.plugin} and ${plugin}`);
      this.#categories.set(eventType, { category, plugin });
    }
  }

  #references = new Map<string, { plugin: string; check: ReferenceCheck<C> }>();

  /** Plugins say how to decide whether a caller may view a record of theirs an entry names. */
  reference(plugin: string, kind: string, check: ReferenceCheck<C>): void {
    this.#startup.assertOpen(`activity reference kind ${kind}`);
    const existing = this.#references.get(kind);
    if (existing) throw new Error(`activity reference kind ${kind} is declared by both ${existing.plugin} and ${plugin}`);
    this.#references.set(kind, { plugin, check });
  }

  #through = new Map<string, { plugin: string; parent: string; locate: ReferenceCheck<C> }>();

  /**
   * A kind whose records the caller sees exactly when it sees their parent record (a study as its
   * project, an assay as its study): an entry naming one is checked through the parent's kind,
   * `locate` giving the parent's id (SQL, NULL when the record is not in the caller's
   * organization). All kinds that reach one check share its probe: each check is sub-plans that
   * PostgreSQL sets up on every execution of a feed, whether an entry needs them or not.
   */
  referenceThrough(plugin: string, kind: string, parent: string, locate: ReferenceCheck<C>): void {
    this.#startup.assertOpen(`activity reference kind ${kind}`);
    const existing = this.#references.get(kind) ?? this.#through.get(kind);
    if (existing) throw new Error(`activity reference kind ${kind} is declared by both ${existing.plugin} and ${plugin}`);
    // Parents first, so that every chain ends at a kind with a check of its own (no circle).
    if (!this.#references.has(parent) && !this.#through.has(parent)) throw new Error(`activity reference kind ${kind} (${plugin}) names ${parent}, not declared before it`);
    this.#through.set(kind, { plugin, parent, locate });
  }

  /**
   * SQL condition on activity aliased `alias`: every further record it names is one the actor
   * may view now. A kind no loaded plugin declares is never shown to non-admins.
   */
  referencesVisible(ctx: C, alias: string): Sql {
    if (ctx.actor.isAdmin) return raw('true');
    const a = raw(alias);
    const ref = sql`${a}.ref_id`;
    const checks = [...this.#references].map(([kind, r]) => {
      const reached = [{ kind, id: ref }, ...this.#reaching(ctx, kind, ref)];
      if (reached.length === 1) return sql` or (${a}.ref_kind = ${kind} and ${r.check(ctx, ref)})`;
      const id = sql`(case ${a}.ref_kind ${join(reached.map((x) => sql`when ${x.kind} then ${x.id}`), ' ')} end)`;
      return sql` or (${a}.ref_kind in (${reached.map((x) => x.kind)}) and ${r.check(ctx, id)})`;
    });
    return sql`(${a}.ref_kind is null${checks.reduce((x, y) => sql`${x}${y}`, raw(''))})`;
  }

  /** The kinds checked through `root` (their parents' chain ends there), each with the SQL of the root record's id. */
  #reaching(ctx: C, root: string, ref: Sql): { kind: string; id: Sql }[] {
    const out: { kind: string; id: Sql }[] = [];
    const walk = (target: string, rootOf: (id: Sql) => Sql) => {
      for (const [kind, t] of this.#through) {
        if (t.parent !== target) continue;
        const own = (id: Sql) => rootOf(t.locate(ctx, id));
        out.push({ kind, id: own(ref) });
        walk(kind, own);
      }
    };
    walk(root, (id) => id);
    return out;
  }

  categoryOf(eventType: string): ActivityCategory | undefined {
    return this.#categories.get(eventType)?.category;
  }

  eventTypes(): { eventType: string; category: ActivityCategory; plugin: string }[] {
    return [...this.#categories].map(([eventType, v]) => ({ eventType, ...v }));
  }

  record(em: EntityManager, actor: Actor, input: ActivityInput): string {
    const category = this.categoryOf(input.eventType);
    if (!category) throw new Error(`event type ${input.eventType} was not declared by any plugin`);
    // Written by `em`'s flush in its transaction: outside one it would be lost without a word.
    if (!em.isInTransaction()) throw new Error(`activity ${input.eventType} must be recorded with the write transaction's EntityManager (db.writeTransaction)`);
    const row = [crypto.randomUUID(), actor.organizationId, input.eventType, category, JSON.stringify(input.data ?? {}), new Date(), input.projectId ?? null,
      input.studyId ?? null, input.assayId ?? null, actor.organizationUserId, input.refers?.kind ?? null, input.refers?.id ?? null];
    const rows = recorded.get(em);
    if (rows) rows.push(row);
    else recorded.set(em, [row]);
    return row[0] as string; // the new record's id
  }
}
