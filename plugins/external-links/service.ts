import crypto from 'node:crypto';
import { db, errors, fetchPage, type OperationContext, type PageRequest, sql } from '../../core/public.ts';
import { lockedParentOf, attachedColumns, attachedDto, attachedTo, mergeUpdate, parentOf, type AttachedRow, type ParentAccess, type ParentKind } from '../../lib/records/index.ts';
import { ExternalLink } from './entities.ts';
import type { CreateBody, UpdateBody } from './schemas.ts';

/** Columns aliased to the entity's property names, so rows and entities share one mapper. */
const columns = sql`${attachedColumns('l')},
  l.label, l.url, l.created_by_id as "createdById", l.created_at as "createdAt", l.updated_at as "updatedAt", l.version`;

interface LinkShape extends AttachedRow {
  label: string;
  url: string;
  createdById: string;
  createdAt: Date | string;
  updatedAt: Date | string;
  version: number;
}

function toDto(l: LinkShape) {
  return {
    ...attachedDto(l),
    label: l.label,
    url: l.url,
    createdById: l.createdById,
    createdAt: db.isoDate(l.createdAt)!,
    updatedAt: db.isoDate(l.updatedAt)!,
    version: l.version,
  };
}

export type ExternalLinkDto = ReturnType<typeof toDto>;

export const linkSort = {
  fields: { createdAt: 'l.created_at', updatedAt: 'l.updated_at', label: 'l.label' },
  default: ['createdAt,desc'],
  tiebreaker: 'l.id',
};

const URL_MESSAGE = 'must be an absolute http or https URL (for example https://example.org/page)';

/**
 * A link must open as a web page from any client: an absolute URL with scheme http or https and
 * a host, written out as such (`example.com`, `ftp://x`, `javascript:alert(1)`, `http:x` and
 * anything with white space are refused, so nothing stored is resolved differently later).
 */
export function checkUrl(url: string): void {
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  const ok = parsed && (parsed.protocol === 'http:' || parsed.protocol === 'https:') && parsed.hostname !== '' && /^https?:\/\/[^\s]+$/i.test(url);
  if (!ok) throw new errors.ValidationError([{ field: 'url', message: URL_MESSAGE }]);
}

/** External links of projects, studies and assays; every method takes the parent kind of its route. */
export class ExternalLinkService {
  async list(ctx: OperationContext, parent: ParentKind, params: Record<string, unknown>, page: PageRequest) {
    const access = await parentOf(ctx, parent, params);
    const from = sql`from external_link l where l.organization_id = ${ctx.actor.organizationId} and ${attachedTo('l', access)}`;
    const { rows, total } = await fetchPage<LinkShape>(ctx.em, { columns, from }, page);
    return { items: rows.map(toDto), total };
  }

  /** A link of this parent (404 naming the link when it is another parent's, or none). */
  async get(ctx: OperationContext, parent: ParentKind, params: Record<string, unknown>, id: string): Promise<ExternalLinkDto> {
    const access = await parentOf(ctx, parent, params);
    const row = await db.queryOne<LinkShape>(
      ctx.em,
      sql`select ${columns} from external_link l
            where l.id = ${id} and l.organization_id = ${ctx.actor.organizationId} and ${attachedTo('l', access)}`,
    );
    if (!row) throw new errors.NotFoundError('External link', id);
    return toDto(row);
  }

  async create(ctx: OperationContext, parent: ParentKind, params: Record<string, unknown>, body: CreateBody): Promise<ExternalLinkDto> {
    const link = await db.writeTransaction(ctx.em, async (em) => {
      const access = await lockedParentOf({ ...ctx, em }, parent, params);
      checkUrl(body.url);
      const l = em.create(ExternalLink, {
        id: crypto.randomUUID(),
        organizationId: ctx.actor.organizationId,
        parentKind: access.kind,
        parentId: access.id,
        label: body.label,
        url: body.url,
        createdById: ctx.actor.organizationUserId,
      });
      this.#record(ctx, em, access, 'external_link.created', l);
      return l;
    });
    return toDto(link);
  }

  async update(ctx: OperationContext, parent: ParentKind, params: Record<string, unknown>, id: string, body: UpdateBody): Promise<ExternalLinkDto> {
    const link = await db.writeTransaction(ctx.em, async (em) => {
      const access = await lockedParentOf({ ...ctx, em }, parent, params);
      const l = await this.#forWrite(ctx, em, access, id);
      if (body.url !== undefined) checkUrl(body.url);
      const fields = mergeUpdate('external link', l, body, ['label', 'url'], {});
      if (fields.length) this.#record(ctx, em, access, 'external_link.updated', l, { fields });
      return l;
    });
    return toDto(link);
  }

  async delete(ctx: OperationContext, parent: ParentKind, params: Record<string, unknown>, id: string): Promise<void> {
    await db.writeTransaction(ctx.em, async (em) => {
      const access = await lockedParentOf({ ...ctx, em }, parent, params);
      const l = await this.#forWrite(ctx, em, access, id);
      em.remove(l);
      this.#record(ctx, em, access, 'external_link.deleted', l);
    });
  }

  /** The link, locked: a second update or delete of it waits, then sees this one's result (404 once deleted). */
  async #forWrite(ctx: OperationContext, em: OperationContext['em'], access: ParentAccess, id: string) {
    await db.query(em, sql`select id from external_link where id = ${id} and organization_id = ${ctx.actor.organizationId} for update`);
    await db.recordLocked(em);
    const link = await em.findOne(ExternalLink, { id, organizationId: ctx.actor.organizationId, parentKind: access.kind, parentId: access.id });
    if (!link) throw new errors.NotFoundError('External link', id);
    return link;
  }

  /** Activity on the parent's project/study/assay, so the link shows in their feeds. */
  #record(ctx: OperationContext, em: OperationContext['em'], access: ParentAccess, eventType: string, l: LinkShape, extra: Record<string, unknown> = {}) {
    ctx.services.activity.record(em, ctx.actor, {
      eventType,
      projectId: access.projectId,
      studyId: access.studyId,
      assayId: access.assayId,
      data: { linkId: l.id, label: l.label, url: l.url, ...extra },
    });
  }
}
