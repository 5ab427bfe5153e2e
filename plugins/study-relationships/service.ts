import crypto from 'node:crypto';
import { db, errors, fetchPage, type OperationContext, type PageRequest, type Sql, sql } from '../../core/public.ts';
import { studyAccess, studyAccessById, studyLocks } from '../studies/extensions.ts';
import { StudyRelationship } from './entities.ts';
import { INVERSE_TYPES, type CreateBody, type RelationshipType } from './schemas.ts';

interface RelationshipShape {
  id: string;
  organizationId: string;
  type: string;
  sourceStudyId: string;
  targetStudyId: string;
  createdById: string;
  createdAt: Date | string;
}

const columns = sql`r.id, r.organization_id as "organizationId", r.type, r.source_study_id as "sourceStudyId",
  r.target_study_id as "targetStudyId", r.created_by_id as "createdById", r.created_at as "createdAt"`;

function toDto(r: RelationshipShape) {
  return {
    id: r.id,
    organizationId: r.organizationId,
    type: r.type as RelationshipType,
    sourceStudyId: r.sourceStudyId,
    targetStudyId: r.targetStudyId,
    createdById: r.createdById,
    createdAt: db.isoDate(r.createdAt)!,
  };
}

export const relationshipSort = {
  fields: { createdAt: 'r.created_at', type: 'r.type' },
  default: ['createdAt,desc'],
  tiebreaker: 'r.id',
};

export class StudyRelationshipService {
  /** `from` for the relationships of a study whose target the actor may view (alias `r`). */
  #fromVisible(ctx: OperationContext, studyId: string): Sql {
    const target = studyAccess(ctx.services, ctx.actor, 't');
    return sql`from study_relationship r join study t on t.id = r.target_study_id ${target.join}
      where r.organization_id = ${ctx.actor.organizationId} and r.source_study_id = ${studyId} and ${target.visible}`;
  }

  /** Relationships originating from a viewable study (404 otherwise), only to studies the actor may view. */
  async list(ctx: OperationContext, studyId: string, page: PageRequest) {
    await studyAccessById(ctx, studyId);
    const { rows, total } = await fetchPage<RelationshipShape>(ctx.em, { columns, from: this.#fromVisible(ctx, studyId) }, page);
    return { items: rows.map(toDto), total };
  }

  /** Creates the relationship and its inverse on the target in one transaction. */
  async create(ctx: OperationContext, studyId: string, body: CreateBody) {
    const created = await db.writeTransaction(ctx.em, async (em) => {
      const tx = { ...ctx, em };
      // Both studies stay where they are until commit (shared locks, kernel order): neither can be
      // deleted meanwhile (no relationship to a deleted study, no 409 for its delete) nor moved
      // (the entry is recorded on the source's current project).
      await db.lockLocated(em, ctx.actor.organizationId, async () => [
        ...(await studyLocks(tx, studyId, 'share')),
        ...(await studyLocks(tx, body.targetStudyId, 'share')),
      ]);
      const source = await studyAccessById(tx, studyId);
      ctx.services.permissions.assertContributor(source);
      if (body.targetStudyId === studyId) {
        throw new errors.ValidationError([{ field: 'targetStudyId', message: 'must be another study than the source study' }]);
      }
      await studyAccessById(tx, body.targetStudyId);
      const inverse = INVERSE_TYPES[body.type];
      // A friendly 409 for the common case; the unique index decides under concurrency.
      const existing = await db.queryOne(
        em,
        sql`select 1 from study_relationship
             where (source_study_id = ${studyId} and type = ${body.type} and target_study_id = ${body.targetStudyId})
                or (source_study_id = ${body.targetStudyId} and type = ${inverse} and target_study_id = ${studyId})`,
      );
      if (existing) throw new errors.ConflictError(`Study ${studyId} already has relationship ${body.type} to study ${body.targetStudyId}`);
      const pair: [string, string, string][] = [
        [studyId, body.type, body.targetStudyId],
        [body.targetStudyId, inverse, studyId],
      ];
      // Rows go in in one global order (lower source id first), so two requests creating the
      // same pair from either end wait on each other at the unique index instead of deadlocking.
      pair.sort((x, y) => (x[0] < y[0] ? -1 : 1));
      const [forward] = pair
        .map(([sourceStudyId, type, targetStudyId]) =>
          em.create(StudyRelationship, {
            id: crypto.randomUUID(),
            organizationId: ctx.actor.organizationId,
            sourceStudyId,
            targetStudyId,
            type,
            createdById: ctx.actor.organizationUserId,
          }),
        )
        .filter((r) => r.sourceStudyId === studyId);
      ctx.services.activity.record(em, ctx.actor, {
        eventType: 'study_relationship.created',
        projectId: source.projectId,
        studyId,
        data: { type: body.type, targetStudyId: body.targetStudyId },
        refers: { kind: 'study', id: body.targetStudyId },
      });
      return forward;
    });
    return toDto(created);
  }

  /** Deletes a relationship originating from the study, and its inverse on the target. */
  async delete(ctx: OperationContext, studyId: string, relationshipId: string): Promise<void> {
    await db.writeTransaction(ctx.em, async (em) => {
      const tx = { ...ctx, em };
      // The source stays where it is until commit, so the entry is recorded on its current project.
      await db.lockLocated(em, ctx.actor.organizationId, () => studyLocks(tx, studyId, 'share'));
      const source = await studyAccessById(tx, studyId);
      const r = await db.queryOne<RelationshipShape>(em, sql`select ${columns} ${this.#fromVisible(tx, studyId)} and r.id = ${relationshipId}`);
      if (!r) throw new errors.NotFoundError('Study relationship', relationshipId);
      ctx.services.permissions.assertContributor(source);
      // Both rows of the pair, locked by id: a delete of the pair from either end waits for this
      // one, then finds nothing (404) instead of recording a second deletion.
      const pair = await db.query<{ id: string }>(
        em,
        sql`select id from study_relationship where organization_id = ${ctx.actor.organizationId} and (id = ${r.id}
              or (source_study_id = ${r.targetStudyId} and type = ${INVERSE_TYPES[r.type as RelationshipType]} and target_study_id = ${studyId}))
            order by id for update`,
      );
      if (!pair.some((p) => p.id === r.id)) throw new errors.NotFoundError('Study relationship', relationshipId);
      await em.nativeDelete(StudyRelationship, { id: { $in: pair.map((p) => p.id) } });
      ctx.services.activity.record(em, ctx.actor, {
        eventType: 'study_relationship.deleted',
        projectId: source.projectId,
        studyId,
        data: { type: r.type, targetStudyId: r.targetStudyId },
        refers: { kind: 'study', id: r.targetStudyId },
      });
    });
  }

  /** Cascade from study (or project) deletion: relationships on both sides go. */
  async deleteOfStudies(ctx: OperationContext, studyIds: string[]): Promise<void> {
    await ctx.em.nativeDelete(StudyRelationship, {
      $or: [{ sourceStudyId: { $in: studyIds } }, { targetStudyId: { $in: studyIds } }],
      organizationId: ctx.actor.organizationId,
    });
  }
}
