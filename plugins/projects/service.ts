import crypto from 'node:crypto';
import {
  NotFoundError,
  fetchPage,
  lifecycleColumns,
  lifecycleDto,
  type LifecycleShape,
  queryOne,
  sql,
  type OperationContext,
  type PageRequest,
  type RecordExtensions,
  type Visibility,
  type LifecycleStatus,
  transition,
  mergeUpdate,
  type Sql,
  raw,
  writeTransaction,
  lockRows,
} from '../../core/public.ts';
import { provisioning } from '../../lib/integrations/index.ts';
import { Project } from './entities.ts';
import { projectContributableBy, projectVisibleTo, visibleProjectTotal, type ProjectRecord } from './extensions.ts';
import type { CreateBody, UpdateBody } from './schemas.ts';

/** Columns aliased to the entity's property names, so rows and entities share one mapper. */
const columns = sql`p.id, p.organization_id as "organizationId", p.code, p.name, p.description, p.visibility, ${lifecycleColumns('p')}`;

interface ProjectShape extends ProjectRecord, LifecycleShape {
  description: string;
}

export type ProjectDto = ReturnType<typeof toDto>;

function toDto(p: ProjectShape) {
  return {
    id: p.id,
    organizationId: p.organizationId,
    code: p.code,
    name: p.name,
    description: p.description,
    visibility: p.visibility as Visibility,
    ...lifecycleDto(p),
  };
}

export const projectSort = {
  fields: { createdAt: 'p.created_at', updatedAt: 'p.updated_at', name: 'p.name', code: 'p.code', status: 'p.status', visibility: 'p.visibility' },
  default: ['createdAt,desc'],
  tiebreaker: 'p.id',
};

export class ProjectService {
  readonly extensions: RecordExtensions<ProjectRecord>;
  constructor(extensions: RecordExtensions<ProjectRecord>) {
    this.extensions = extensions;
  }

  #selected?: Sql;
  /** The record's columns plus the fields other plugins contribute (one query per read). */
  get #columns(): Sql {
    return (this.#selected ??= sql`${columns}${this.extensions.outputColumns(raw('p.id'))}`);
  }

  async list(ctx: OperationContext, page: PageRequest) {
    const from = sql`from project p where ${projectVisibleTo(ctx.services, ctx.actor, 'p')}`;
    const total = visibleProjectTotal(ctx.actor);
    const { rows, total: n } = await fetchPage<ProjectShape>(ctx.em, { columns: this.#columns, from, total }, page);
    return { items: await this.extensions.decorate(ctx.em, rows.map(toDto), rows), total: n };
  }

  async get(ctx: OperationContext, id: string): Promise<ProjectDto> {
    const row = await this.#find(ctx, id);
    const [dto] = await this.extensions.decorate(ctx.em, [toDto(row)], [row]);
    return dto;
  }

  /** The project if the actor may view it (else 404), with whether they may contribute. */
  async #find(ctx: OperationContext, id: string) {
    const row = await queryOne<ProjectShape & { canContribute: boolean }>(
      ctx.em,
      sql`select ${this.#columns}, ${projectContributableBy(ctx.services, ctx.actor, 'p')} as "canContribute"
            from project p where p.id = ${id} and ${projectVisibleTo(ctx.services, ctx.actor, 'p')}`,
    );
    if (!row) throw new NotFoundError('Project', id);
    return row;
  }

  /**
   * Loads the entity for a write (inside its transaction): locks the project row first, so
   * writers of the project, and of its studies and assays (which share-lock it), go one at a
   * time; then 404 if not viewable, 403 if not a contributor, judged on the current row.
   */
  async #forWrite(ctx: OperationContext, id: string) {
    await lockRows(ctx.em, ctx.actor.organizationId, [{ table: 'project', id, mode: 'update' }]);
    const access = await this.#find(ctx, id);
    ctx.services.permissions.assertContributor(access);
    return ctx.em.findOneOrFail(Project, { id, organizationId: ctx.actor.organizationId });
  }

  async #respond(ctx: OperationContext, project: ProjectShape): Promise<ProjectDto> {
    const [dto] = await this.extensions.decorate(ctx.em, [toDto(project)]);
    return dto;
  }

  async create(ctx: OperationContext, body: CreateBody): Promise<ProjectDto> {
    const project = await writeTransaction(ctx.em, async (em) => {
      const tx = { ...ctx, em };
      const p = em.create(Project, {
        id: crypto.randomUUID(),
        organizationId: ctx.actor.organizationId,
        code: body.code,
        name: body.name,
        description: body.description,
        visibility: body.visibility ?? 'PRIVATE',
        status: 'ACTIVE',
        archived: false,
        createdById: ctx.actor.organizationUserId,
      });
      // The creator becomes a member, so a PRIVATE project stays reachable to them.
      await ctx.services.permissions.addMember(em, ctx.actor, p.id, ctx.actor.organizationUserId);
      await em.flush();
      await this.extensions.saveFields(tx, p, body, 'create');
      await this.extensions.runOnCreate(tx, p);
      ctx.services.activity.record(em, ctx.actor, {
        eventType: 'project.created',
        projectId: p.id,
        data: { code: p.code, name: p.name, visibility: p.visibility },
      });
      return p;
    });
    await this.extensions.runAfterCreate(ctx, project);
    return this.#respond(ctx, project);
  }

  async update(ctx: OperationContext, id: string, body: UpdateBody): Promise<ProjectDto> {
    const project = await writeTransaction(ctx.em, async (em) => {
      const tx = { ...ctx, em };
      const p = await this.#forWrite(tx, id);
      const oldVisibility = p.visibility;
      const changed = mergeUpdate('project', p, body, ['code', 'name', 'description', 'visibility'], {
        status: `POST /projects/${id}/status`,
      });
      changed.push(...(await this.extensions.saveFields(tx, p, body, 'update')));
      ctx.services.activity.record(em, ctx.actor, { eventType: 'project.updated', projectId: id, data: { fields: changed } });
      if (p.visibility !== oldVisibility) {
        ctx.services.activity.record(em, ctx.actor, {
          eventType: 'project.visibility_changed',
          projectId: id,
          data: { oldVisibility, newVisibility: p.visibility },
        });
      }
      return p;
    });
    return this.#respond(ctx, project);
  }

  async setStatus(ctx: OperationContext, id: string, status: LifecycleStatus): Promise<ProjectDto> {
    const project = await writeTransaction(ctx.em, async (em) => {
      const p = await this.#forWrite({ ...ctx, em }, id);
      const oldStatus = transition('project', p, status);
      if (!oldStatus) return p;
      ctx.services.activity.record(em, ctx.actor, { eventType: 'project.status_changed', projectId: id, data: { oldStatus, newStatus: status } });
      return p;
    });
    return this.#respond(ctx, project);
  }

  /** `POST /projects/:id/retry-initialization`: reruns the failed provisioning steps. */
  async retryInitialization(ctx: OperationContext, id: string): Promise<ProjectDto> {
    const project = await writeTransaction(ctx.em, async (em) => {
      const p = await this.#forWrite({ ...ctx, em }, id);
      await provisioning(ctx.services).retry({ ...ctx, em }, 'project', p);
      return p;
    });
    return this.#respond(ctx, project);
  }

  async setArchived(ctx: OperationContext, id: string, archived: boolean): Promise<ProjectDto> {
    const project = await writeTransaction(ctx.em, async (em) => {
      const p = await this.#forWrite({ ...ctx, em }, id);
      if (p.archived === archived) return p;
      p.archived = archived;
      ctx.services.activity.record(em, ctx.actor, { eventType: 'project.archived', projectId: id, data: { archived } });
      return p;
    });
    return this.#respond(ctx, project);
  }

  async delete(ctx: OperationContext, id: string): Promise<void> {
    await writeTransaction(ctx.em, async (em) => {
      const tx = { ...ctx, em };
      const p = await this.#forWrite(tx, id);
      // Children first (studies, assays, attachments ...), in the same transaction.
      await this.extensions.runBeforeDelete(tx, [p]);
      await ctx.services.permissions.removeProject(em, id);
      em.remove(p);
      ctx.services.activity.record(em, ctx.actor, { eventType: 'project.deleted', projectId: id, data: { code: p.code, name: p.name } });
    });
  }
}
