import crypto from 'node:crypto';
import { db, errors, fetchPage, type OperationContext, type PageRequest, raw, type Sql, sql, type Visibility } from '../../core/public.ts';
import { mergeUpdate } from '../../lib/records/index.ts';
import { studyAccess, studyAccessById, studyLocks, type StudyReader } from '../studies/extensions.ts';
import { StudyCollection, StudyCollectionStudy } from './entities.ts';
import { collectionChangeableBy, collectionVisibleTo, ownsCollection } from './extensions.ts';
import type { CreateBody, UpdateBody } from './schemas.ts';

interface CollectionRow {
  id: string;
  organizationId: string;
  name: string;
  description: string | null;
  visibility: string;
  studyCount: number;
  createdById: string;
  createdAt: Date | string;
  updatedAt: Date | string;
  version: number;
}

/**
 * Columns aliased to the wire names. `studyCount` counts only the studies the actor may view,
 * so a collection never reveals how many hidden studies it holds.
 */
function columns(ctx: OperationContext): Sql {
  return sql`${ownColumns}, ${studyCount(ctx, 'c')}`;
}

const ownColumns = sql`c.id, c.organization_id as "organizationId", c.name, c.description, c.visibility,
    c.created_by_id as "createdById", c.created_at as "createdAt", c.updated_at as "updatedAt", c.version`;

function studyCount(ctx: OperationContext, collection: string): Sql {
  const access = studyAccess(ctx.services, ctx.actor, 'cs');
  return sql`(select count(*)::int from study_collection_study m join study cs on cs.id = m.study_id ${access.join}
      where m.collection_id = ${raw(collection)}.id and ${access.visible}) as "studyCount"`;
}

function toDto(c: CollectionRow) {
  return {
    id: c.id,
    organizationId: c.organizationId,
    name: c.name,
    description: c.description,
    visibility: c.visibility as Visibility,
    studyCount: c.studyCount,
    createdById: c.createdById,
    createdAt: db.isoDate(c.createdAt)!,
    updatedAt: db.isoDate(c.updatedAt)!,
    version: c.version,
  };
}

export const collectionSort = {
  fields: { createdAt: 'c.created_at', updatedAt: 'c.updated_at', name: 'c.name', visibility: 'c.visibility' },
  default: ['createdAt,desc'],
  tiebreaker: 'c.id',
};

export class StudyCollectionService {
  readonly studies: StudyReader;
  constructor(studies: StudyReader) {
    this.studies = studies;
  }

  async list(ctx: OperationContext, page: PageRequest) {
    const from = sql`from study_collection c where ${collectionVisibleTo(ctx.actor, 'c')}`;
    // The counts only for the page's collections (a deep page used to count every skipped one too).
    const { rows, total } = await fetchPage<CollectionRow>(ctx.em, { columns: ownColumns, from, after: studyCount(ctx, 'page') }, page);
    return { items: rows.map(toDto), total };
  }

  /** The collection with the studies the actor may view (filtered in SQL by the studies plugin). */
  async get(ctx: OperationContext, id: string) {
    const row = await this.#find(ctx, id);
    const studies = await this.studies.visible(
      ctx,
      sql`exists (select 1 from study_collection_study m where m.study_id = s.id and m.collection_id = ${id})`,
    );
    return { ...toDto(row), studies };
  }

  /** The collection if the actor may view it (else 404), with whether they may change it. */
  async #find(ctx: OperationContext, id: string) {
    const row = await db.queryOne<CollectionRow & { canChange: boolean }>(
      ctx.em,
      sql`select ${columns(ctx)}, ${collectionChangeableBy(ctx.actor, 'c')} as "canChange"
            from study_collection c where c.id = ${id} and ${collectionVisibleTo(ctx.actor, 'c')}`,
    );
    if (!row) throw new errors.NotFoundError('Study collection', id);
    return row;
  }

  /**
   * For a write: locks the collection row until commit (`update` to change or delete it,
   * `no key update` to change its studies), so its writers run one after the other and every check
   * below, an `If-Match` included, judges the current state (its studies are part of what a GET
   * shows). Any study locks come first (kernel rows before this plugin's).
   */
  async #lock(ctx: OperationContext, id: string, mode: 'update' | 'no key update') {
    await db.query(ctx.em, sql`select id from study_collection where id = ${id} and organization_id = ${ctx.actor.organizationId} for ${raw(mode)}`);
    await db.recordLocked(ctx.em);
    return this.#find(ctx, id);
  }

  /** For a write: 404 if not viewable, 403 unless the actor may change it. */
  async #forChange(ctx: OperationContext, id: string, mode: 'update' | 'no key update') {
    const row = await this.#lock(ctx, id, mode);
    if (!row.canChange) throw new errors.ForbiddenError();
    return row;
  }

  async create(ctx: OperationContext, body: CreateBody) {
    const id = await db.writeTransaction(ctx.em, async (em) => {
      const c = em.create(StudyCollection, {
        id: crypto.randomUUID(),
        organizationId: ctx.actor.organizationId,
        name: body.name,
        description: body.description ?? null,
        visibility: body.visibility ?? 'PRIVATE',
        createdById: ctx.actor.organizationUserId,
      });
      ctx.services.activity.record(em, ctx.actor, {
        eventType: 'study_collection.created',
        data: { collectionId: c.id, name: c.name, visibility: c.visibility },
      });
      return c.id;
    });
    return db.readAfterCommit(() => this.get(ctx, id));
  }

  async update(ctx: OperationContext, id: string, body: UpdateBody) {
    await db.writeTransaction(ctx.em, async (em) => {
      const row = await this.#forChange({ ...ctx, em }, id, 'update');
      const c = await em.findOneOrFail(StudyCollection, { id, organizationId: ctx.actor.organizationId });
      const oldVisibility = c.visibility;
      // Anyone may edit a PUBLIC collection, but only its owner (or an admin) decides who sees it.
      if (body.visibility !== undefined && body.visibility !== oldVisibility && !ownsCollection(ctx.actor, row)) {
        throw new errors.ForbiddenError();
      }
      const fields = mergeUpdate('study collection', c, body, ['name', 'description', 'visibility'], {});
      if (fields.length) {
        ctx.services.activity.record(em, ctx.actor, { eventType: 'study_collection.updated', data: { collectionId: id, fields } });
      }
      if (c.visibility !== oldVisibility) {
        ctx.services.activity.record(em, ctx.actor, {
          eventType: 'study_collection.visibility_changed',
          data: { collectionId: id, oldVisibility, newVisibility: c.visibility },
        });
      }
    });
    return this.get(ctx, id);
  }

  /** Owner or admin only (403 for others who may view it); its memberships go with it. */
  async delete(ctx: OperationContext, id: string): Promise<void> {
    await db.writeTransaction(ctx.em, async (em) => {
      const row = await this.#lock({ ...ctx, em }, id, 'update');
      if (!ownsCollection(ctx.actor, row)) throw new errors.ForbiddenError();
      await em.nativeDelete(StudyCollectionStudy, { collectionId: id });
      await em.nativeDelete(StudyCollection, { id, organizationId: ctx.actor.organizationId });
      ctx.services.activity.record(em, ctx.actor, { eventType: 'study_collection.deleted', data: { collectionId: id, name: row.name } });
    });
  }

  /** Idempotent: adding a study already in the collection changes nothing and records nothing. */
  async addStudy(ctx: OperationContext, id: string, studyId: string) {
    await db.writeTransaction(ctx.em, async (em) => {
      const tx = { ...ctx, em };
      await this.#lockStudy(tx, studyId);
      await this.#forChange(tx, id, 'no key update');
      const study = await studyAccessById(tx, studyId);
      const inserted = await db.query(
        em,
        sql`insert into study_collection_study (collection_id, study_id, organization_id, added_by_id)
              values (${id}, ${studyId}, ${ctx.actor.organizationId}, ${ctx.actor.organizationUserId})
              on conflict do nothing returning study_id`,
      );
      if (inserted.length) this.#recordMembership(tx, 'study_collection.study_added', id, study);
    });
    return this.get(ctx, id);
  }

  /** Idempotent: removing a study that is not in the collection changes nothing. */
  async removeStudy(ctx: OperationContext, id: string, studyId: string): Promise<void> {
    await db.writeTransaction(ctx.em, async (em) => {
      const tx = { ...ctx, em };
      await this.#lockStudy(tx, studyId);
      await this.#forChange(tx, id, 'no key update');
      const study = await studyAccessById(tx, studyId);
      const removed = await em.nativeDelete(StudyCollectionStudy, { collectionId: id, studyId });
      if (removed) this.#recordMembership(tx, 'study_collection.study_removed', id, study);
    });
  }

  /**
   * The study stays where it is until commit (shared lock, kernel order): it cannot be deleted
   * meanwhile (no membership of a deleted study, no 409 for its delete) nor moved (the entry is
   * recorded on its current project).
   */
  #lockStudy(ctx: OperationContext, studyId: string) {
    return db.lockLocated(ctx.em, ctx.actor.organizationId, () => studyLocks(ctx, studyId, 'share'));
  }

  /** Recorded on the study (and its project), so it shows in the study's activity. */
  #recordMembership(ctx: OperationContext, eventType: string, collectionId: string, study: { id: string; projectId: string }) {
    ctx.services.activity.record(ctx.em, ctx.actor, {
      eventType,
      projectId: study.projectId,
      studyId: study.id,
      data: { collectionId, studyId: study.id, projectId: study.projectId },
      refers: { kind: 'study_collection', id: collectionId },
    });
  }

  /** Cascade from study (or project) deletion: the studies leave every collection. */
  async removeStudies(ctx: OperationContext, studyIds: string[]): Promise<void> {
    await ctx.em.nativeDelete(StudyCollectionStudy, { studyId: { $in: studyIds }, organizationId: ctx.actor.organizationId });
  }
}
