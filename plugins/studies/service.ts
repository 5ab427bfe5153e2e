import crypto from 'node:crypto';
import {
  fetchPage,
  recordTotal,
  isoDate,
  lifecycleColumns,
  lifecycleDto,
  type LifecycleShape,
  mergeUpdate,
  NotFoundError,
  parseDateInput,
  query,
  queryOne,
  raw,
  sql,
  type Sql,
  transition,
  type LifecycleStatus,
  type OperationContext,
  type PageRequest,
  type RecordExtensions,
  writeTransaction,
  lockRows,
  lockLocated,
  lockChildren,
} from '../../core/public.ts';
import { provisioning } from '../../lib/integrations/index.ts';
import { projectAccess, visibleChildTotal } from '../projects/extensions.ts';
import { Study } from './entities.ts';
import { studyAccess, studyLocks, type StudyRecord } from './extensions.ts';
import type { CreateBody, UpdateBody } from './schemas.ts';

/** Columns aliased to the entity's property names, so rows and entities share one mapper. */
const columns = sql`s.id, s.organization_id as "organizationId", s.project_id as "projectId", s.name, s.description,
  s.start_date as "startDate", ${lifecycleColumns('s')}`;

interface StudyShape extends StudyRecord, LifecycleShape {
  description?: string | null;
  startDate?: Date | string | null;
}

function toDto(s: StudyShape) {
  return {
    id: s.id,
    organizationId: s.organizationId,
    projectId: s.projectId,
    name: s.name,
    description: s.description ?? null,
    startDate: isoDate(s.startDate ?? null),
    ...lifecycleDto(s),
  };
}

export type StudyDto = ReturnType<typeof toDto>;

export const studySort = {
  fields: { createdAt: 's.created_at', updatedAt: 's.updated_at', name: 's.name', status: 's.status', startDate: 's.start_date' },
  default: ['createdAt,desc'],
  tiebreaker: 's.id',
};

export class StudyService {
  readonly extensions: RecordExtensions<StudyRecord>;
  constructor(extensions: RecordExtensions<StudyRecord>) {
    this.extensions = extensions;
  }

  /** Studies the actor may view, optionally of one project (404 when that project is not viewable). */
  #selected?: Sql;
  /** The record's columns plus the fields other plugins contribute (one query per read). */
  get #columns(): Sql {
    return (this.#selected ??= sql`${columns}${this.extensions.outputColumns(raw('s.id'))}`);
  }

  async list(ctx: OperationContext, page: PageRequest, projectId?: string) {
    if (projectId) await projectAccess(ctx, projectId);
    const access = studyAccess(ctx.services, ctx.actor, 's');
    const byProject = projectId ? sql` and s.project_id = ${projectId}` : raw('');
    const from = sql`from study s ${access.join} where ${access.visible}${byProject}`;
    const count = projectId ? recordTotal(sql`${projectId}`, 'study') : visibleChildTotal(ctx.actor, 'study');
    const { rows, total } = await fetchPage<StudyShape>(ctx.em, { columns: this.#columns, from, total: count }, page);
    return { items: await this.extensions.decorate(ctx.em, rows.map(toDto), rows), total };
  }

  /** For `studyReader`: the viewable studies matching `where` (on alias `s`), decorated, unpaged. */
  async visible(ctx: OperationContext, where: Sql): Promise<StudyDto[]> {
    const access = studyAccess(ctx.services, ctx.actor, 's');
    const rows = await query<StudyShape>(
      ctx.em,
      sql`select ${this.#columns} from study s ${access.join} where ${access.visible} and ${where} order by s.created_at desc, s.id`,
    );
    return this.extensions.decorate(ctx.em, rows.map(toDto), rows);
  }

  async get(ctx: OperationContext, id: string): Promise<StudyDto> {
    const row = await this.#find(ctx, id);
    const [dto] = await this.extensions.decorate(ctx.em, [toDto(row)], [row]);
    return dto;
  }

  async #find(ctx: OperationContext, id: string) {
    const access = studyAccess(ctx.services, ctx.actor, 's');
    const row = await queryOne<StudyShape & { canContribute: boolean }>(
      ctx.em,
      sql`select ${this.#columns}, ${access.contributable} as "canContribute" from study s ${access.join} where s.id = ${id} and ${access.visible}`,
    );
    if (!row) throw new NotFoundError('Study', id);
    return row;
  }

  /**
   * Loads the entity for a write (inside its transaction): locks its project (shared) and the
   * study, plus a move's target project, in the kernel's lock order; then 404 if not viewable,
   * 403 if not a contributor on its project, judged on the current rows.
   */
  async #forWrite(ctx: OperationContext, id: string, targetProjectId?: string) {
    await lockLocated(ctx.em, ctx.actor.organizationId, async () => [
      ...(await studyLocks(ctx, id, 'update')),
      ...(targetProjectId ? [{ table: 'project', id: targetProjectId, mode: 'share' } as const] : []),
    ]);
    ctx.services.permissions.assertContributor(await this.#find(ctx, id));
    return ctx.em.findOneOrFail(Study, { id, organizationId: ctx.actor.organizationId });
  }

  async #respond(ctx: OperationContext, study: StudyShape): Promise<StudyDto> {
    const [dto] = await this.extensions.decorate(ctx.em, [toDto(study)]);
    return dto;
  }

  async create(ctx: OperationContext, body: CreateBody): Promise<StudyDto> {
    const startDate = parseDateInput('startDate', body.startDate);
    const study = await writeTransaction(ctx.em, async (em) => {
      const tx = { ...ctx, em };
      // The project must not be deleted between this check and the commit (else a 23503).
      await lockRows(em, ctx.actor.organizationId, [{ table: 'project', id: body.projectId, mode: 'share' }]);
      ctx.services.permissions.assertContributor(await projectAccess(tx, body.projectId));
      const s = em.create(Study, {
        id: crypto.randomUUID(),
        organizationId: ctx.actor.organizationId,
        projectId: body.projectId,
        name: body.name,
        description: body.description ?? null,
        status: 'ACTIVE',
        startDate: startDate ?? null,
        archived: false,
        createdById: ctx.actor.organizationUserId,
      });
      await em.flush();
      await this.extensions.saveFields(tx, s, body, 'create');
      await this.extensions.runOnCreate(tx, s);
      ctx.services.activity.record(em, ctx.actor, { eventType: 'study.created', projectId: s.projectId, studyId: s.id, data: { name: s.name } });
      return s;
    });
    await this.extensions.runAfterCreate(ctx, study);
    return this.#respond(ctx, study);
  }

  async update(ctx: OperationContext, id: string, body: UpdateBody): Promise<StudyDto> {
    const merged = { ...body, startDate: parseDateInput('startDate', body.startDate) };
    const study = await writeTransaction(ctx.em, async (em) => {
      const tx = { ...ctx, em };
      const s = await this.#forWrite(tx, id);
      const changed = mergeUpdate('study', s, merged, ['name', 'description', 'startDate'], {
        status: `POST /studies/${id}/status`,
        projectId: `PATCH /studies/${id}/move`,
      });
      changed.push(...(await this.extensions.saveFields(tx, s, body, 'update')));
      ctx.services.activity.record(em, ctx.actor, { eventType: 'study.updated', projectId: s.projectId, studyId: id, data: { fields: changed } });
      return s;
    });
    return this.#respond(ctx, study);
  }

  async setStatus(ctx: OperationContext, id: string, status: LifecycleStatus): Promise<StudyDto> {
    const study = await writeTransaction(ctx.em, async (em) => {
      const s = await this.#forWrite({ ...ctx, em }, id);
      const oldStatus = transition('study', s, status);
      if (oldStatus) {
        ctx.services.activity.record(em, ctx.actor, {
          eventType: 'study.status_changed',
          projectId: s.projectId,
          studyId: id,
          data: { oldStatus, newStatus: status },
        });
      }
      return s;
    });
    return this.#respond(ctx, study);
  }

  /** `POST /studies/:id/retry-initialization`: reruns the failed provisioning steps. */
  async retryInitialization(ctx: OperationContext, id: string): Promise<StudyDto> {
    const study = await writeTransaction(ctx.em, async (em) => {
      const s = await this.#forWrite({ ...ctx, em }, id);
      await provisioning(ctx.services).retry({ ...ctx, em }, 'study', s);
      return s;
    });
    return this.#respond(ctx, study);
  }

  async setArchived(ctx: OperationContext, id: string, archived: boolean): Promise<StudyDto> {
    const study = await writeTransaction(ctx.em, async (em) => {
      const s = await this.#forWrite({ ...ctx, em }, id);
      if (s.archived !== archived) {
        s.archived = archived;
        ctx.services.activity.record(em, ctx.actor, { eventType: 'study.archived', projectId: s.projectId, studyId: id, data: { archived } });
      }
      return s;
    });
    return this.#respond(ctx, study);
  }

  /** Moves a study (and so its assays) to another project; contributor on both; recorded on both. */
  async move(ctx: OperationContext, id: string, projectId: string): Promise<StudyDto> {
    const study = await writeTransaction(ctx.em, async (em) => {
      const tx = { ...ctx, em };
      const s = await this.#forWrite(tx, id, projectId);
      if (s.projectId === projectId) return s;
      ctx.services.permissions.assertContributor(await projectAccess(tx, projectId));
      const fromProjectId = s.projectId;
      s.projectId = projectId;
      // Its history (and its assays') goes with it: judged where it is now, not where it was.
      await query(em, sql`update activity set project_id = ${projectId}
        where study_id = ${id} and organization_id = ${ctx.actor.organizationId} and event_type <> 'study.moved'`);
      const data = { fromProjectId, toProjectId: projectId };
      for (const [side, other] of [[fromProjectId, projectId], [projectId, fromProjectId]]) {
        ctx.services.activity.record(em, ctx.actor, { eventType: 'study.moved', projectId: side, studyId: id, data, refers: { kind: 'project', id: other } });
      }
      return s;
    });
    return this.#respond(ctx, study);
  }

  async delete(ctx: OperationContext, id: string): Promise<void> {
    await writeTransaction(ctx.em, async (em) => {
      const tx = { ...ctx, em };
      const s = await this.#forWrite(tx, id);
      await this.extensions.runBeforeDelete(tx, [s]);
      em.remove(s);
      ctx.services.activity.record(em, ctx.actor, { eventType: 'study.deleted', projectId: s.projectId, studyId: id, data: { name: s.name } });
    });
  }

  /** Cascade from project deletion: the studies' own children first, then the studies, in one go. */
  async deleteOfProjects(ctx: OperationContext, projectIds: string[]): Promise<void> {
    // The projects are locked: lock their studies as they are now (one moved away is not taken along).
    const ids = await lockChildren(ctx.em, ctx.actor.organizationId, 'study', sql`project_id in (${projectIds})`);
    if (!ids.length) return;
    const studies = await ctx.em.find(Study, { id: { $in: ids } });
    await this.extensions.runBeforeDelete(ctx, studies);
    await ctx.em.nativeDelete(Study, { id: { $in: ids } });
  }
}
