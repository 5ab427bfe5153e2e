import crypto from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Actor } from '../auth/api-keys.ts';
import { Activity } from '../entities/index.ts';

export const ACTIVITY_CATEGORIES = ['RESEARCH', 'GOVERNANCE', 'ADMINISTRATIVE'] as const;
export type ActivityCategory = (typeof ACTIVITY_CATEGORIES)[number];

export interface ActivityInput {
  eventType: string;
  data?: Record<string, unknown>;
  projectId?: string | null;
  studyId?: string | null;
  assayId?: string | null;
}

/**
 * Records activity. Call it with the EntityManager of the change's own transaction: the record
 * is flushed with the change, so there is never one without the other.
 */
export class ActivityService {
  #categories = new Map<string, { category: ActivityCategory; plugin: string }>();

  /** Plugins declare their event types (and categories) at start-up. */
  declare(plugin: string, events: Record<string, ActivityCategory>): void {
    for (const [eventType, category] of Object.entries(events)) {
      const existing = this.#categories.get(eventType);
      if (existing) throw new Error(`event type ${eventType} is declared by both ${existing.plugin} and ${plugin}`);
      this.#categories.set(eventType, { category, plugin });
    }
  }

  categoryOf(eventType: string): ActivityCategory | undefined {
    return this.#categories.get(eventType)?.category;
  }

  eventTypes(): { eventType: string; category: ActivityCategory; plugin: string }[] {
    return [...this.#categories].map(([eventType, v]) => ({ eventType, ...v }));
  }

  record(em: EntityManager, actor: Actor, input: ActivityInput): void {
    const category = this.categoryOf(input.eventType);
    if (!category) throw new Error(`event type ${input.eventType} was not declared by any plugin`);
    em.create(Activity, {
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
    });
  }
}
