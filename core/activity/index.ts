import crypto from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Actor } from '../auth/api-keys.ts';
import { Activity } from '../entities/index.ts';
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

/**
 * Records activity. Call it with the EntityManager of the change's own transaction: the record
 * is flushed with the change, so there is never one without the other. `C` is the operation
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
    // Created on `em`, the entry is written by that transaction's commit: outside one it would be lost without a word.
    if (!em.isInTransaction()) throw new Error(`activity ${input.eventType} must be recorded with the write transaction's EntityManager (db.writeTransaction)`);
    return em.create(Activity, {
      id: crypto.randomUUID(),
      organizationId: actor.organizationId,
      eventType: input.eventType,
      category,
      data: input.data ?? {},
      date: new Date(),
      projectId: input.projectId ?? null,
      studyId: input.studyId ?? null,
      assayId: input.assayId ?? null,
      organizationUserId: actor.organizationUserId,
      refKind: input.refers?.kind ?? null,
      refId: input.refers?.id ?? null,
    }).id; // the new record's id
  }
}
