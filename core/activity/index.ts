import crypto from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Actor } from '../auth/api-keys.ts';
import { raw, sql, type Sql } from '../db/sql.ts';
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

  /**
   * SQL condition on activity aliased `alias`: every further record it names is one the actor
   * may view now. A kind no loaded plugin declares is never shown to non-admins.
   */
  referencesVisible(ctx: C, alias: string): Sql {
    if (ctx.actor.isAdmin) return raw('true');
    const a = raw(alias);
    const checks = [...this.#references].map(([kind, r]) => sql` or (${a}.ref_kind = ${kind} and ${r.check(ctx, sql`${a}.ref_id`)})`);
    return sql`(${a}.ref_kind is null${checks.reduce((x, y) => sql`${x}${y}`, raw(''))})`;
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
