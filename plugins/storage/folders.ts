import crypto from 'node:crypto';
import { type Actor, db, type EntityManager, errors, fetchPage, type KernelServices, type OperationContext, type PageRequest, sql } from '../../core/public.ts';
import { lockedParentOf, attachedColumns, attachedDto, attachedTo, contributableParentOf, parentOf, type AttachedRow, type ParentAccess, type ParentKind } from '../../lib/records/index.ts';
import { existingFolder, pathOf } from './checks.ts';
import { findDrive } from './drives.ts';
import type { AttachBody } from './schemas.ts';

const columns = sql`${attachedColumns('f')},
  f.drive_id as "driveId", f.path, f.name, f.is_primary as "isPrimary", f.created_by_id as "createdById",
  f.created_at as "createdAt", f.updated_at as "updatedAt"`;

interface FolderRow extends AttachedRow {
  driveId: string;
  path: string;
  name: string;
  isPrimary: boolean;
  createdById: string;
  createdAt: Date | string;
  updatedAt: Date | string;
}

function toDto(f: FolderRow) {
  return {
    ...attachedDto(f),
    driveId: f.driveId,
    path: f.path,
    name: f.name,
    primary: f.isPrimary,
    createdById: f.createdById,
    createdAt: db.isoDate(f.createdAt)!,
    updatedAt: db.isoDate(f.updatedAt)!,
  };
}

export type StorageFolderDto = ReturnType<typeof toDto>;

export const folderSort = {
  fields: { primary: 'f.is_primary', createdAt: 'f.created_at', path: 'f.path', name: 'f.name' },
  default: ['primary,desc', 'createdAt,asc'],
  tiebreaker: 'f.id',
};

/** What an attachment row is made of. */
export interface NewAttachment {
  parent: Pick<ParentAccess, 'kind' | 'id' | 'projectId' | 'studyId' | 'assayId'>;
  driveId: string;
  path: string;
  name: string;
  primary: boolean;
  /** Extra activity data (e.g. the project storage `mode`). */
  data?: Record<string, unknown>;
}

/**
 * Inserts an attachment and its `storage_folder.attached` activity in the caller's transaction.
 * Used by attach and by the project's primary folder at creation.
 */
export async function insertAttachment(em: EntityManager, services: KernelServices, actor: Actor, a: NewAttachment): Promise<string> {
  const id = crypto.randomUUID();
  await em.execute(
    `insert into storage_folder (id, organization_id, parent_kind, parent_id, drive_id, path, name, is_primary, created_by_id)
     values (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    [id, actor.organizationId, a.parent.kind, a.parent.id, a.driveId, a.path, a.name, a.primary, actor.organizationUserId],
  );
  services.activity.record(em, actor, {
    eventType: 'storage_folder.attached',
    projectId: a.parent.projectId,
    studyId: a.parent.studyId,
    assayId: a.parent.assayId,
    data: { folderId: id, driveId: a.driveId, path: a.path, primary: a.primary, ...a.data },
  });
  return id;
}

/**
 * The parent's own row is locked for update, not share (lockedParentOf): the folder writes of
 * one record run one after another, so there is exactly one primary.
 */
const lockedFolderParent = (ctx: OperationContext, parent: ParentKind, params: Record<string, unknown>) =>
  lockedParentOf(ctx, parent, params, 'update');

/** Storage folder attachments of projects, studies and assays; every method takes its route's parent kind. */
export class FolderService {
  async list(ctx: OperationContext, parent: ParentKind, params: Record<string, unknown>, page: PageRequest) {
    const access = await parentOf(ctx, parent, params);
    const from = sql`from storage_folder f where f.organization_id = ${ctx.actor.organizationId} and ${attachedTo('f', access)}`;
    const { rows, total } = await fetchPage<FolderRow>(ctx.em, { columns, from }, page);
    return { items: rows.map(toDto), total };
  }

  async get(ctx: OperationContext, parent: ParentKind, params: Record<string, unknown>, id: string): Promise<StorageFolderDto> {
    const access = await parentOf(ctx, parent, params);
    return toDto(await this.#find(ctx.em, ctx.actor, access, id));
  }

  /**
   * Attaches an existing folder. The drive is asked before the transaction opens (bounded by the
   * request limit), so a slow drive never holds a transaction. The first folder of a record
   * becomes its primary.
   */
  async attach(ctx: OperationContext, parent: ParentKind, params: Record<string, unknown>, body: AttachBody): Promise<StorageFolderDto> {
    await contributableParentOf(ctx, parent, params);
    const path = pathOf(body.path, 'path');
    const drive = await findDrive(ctx.em, ctx.actor.organizationId, body.driveId);
    const info = await existingFolder(ctx.services, drive, path, { driveId: 'driveId', path: 'path' });
    const id = await db.writeTransaction(ctx.em, async (em) => {
      const access = await lockedFolderParent({ ...ctx, em }, parent, params);
      const taken = await db.queryOne<{ id: string }>(
        em,
        sql`select f.id from storage_folder f where ${attachedTo('f', access)} and f.drive_id = ${drive.id} and f.path = ${path}`,
      );
      if (taken) throw new errors.ConflictError(`Folder "${path || '/'}" of storage drive "${drive.name}" is already attached to this ${access.kind} (attachment ${taken.id})`);
      const hasPrimary = await db.queryOne(em, sql`select 1 from storage_folder f where ${attachedTo('f', access)} and f.is_primary`);
      return insertAttachment(em, ctx.services, ctx.actor, {
        parent: access,
        driveId: drive.id,
        path,
        name: info.name,
        primary: !hasPrimary,
      });
    });
    return this.get(ctx, parent, params, id);
  }

  /** Makes the folder the record's primary; the previous primary stays attached (exactly one primary). */
  async setPrimary(ctx: OperationContext, parent: ParentKind, params: Record<string, unknown>, id: string, primary: boolean): Promise<StorageFolderDto> {
    if (primary !== true) {
      throw new errors.BadRequestError('primary must be true: a record always keeps one primary folder; make another folder primary instead');
    }
    await db.writeTransaction(ctx.em, async (em) => {
      const access = await lockedFolderParent({ ...ctx, em }, parent, params);
      const folder = await this.#find(em, ctx.actor, access, id);
      if (folder.isPrimary) return;
      const previous = await db.queryOne<{ id: string }>(
        em,
        sql`update storage_folder f set is_primary = false, updated_at = now() where ${attachedTo('f', access)} and f.is_primary returning f.id`,
      );
      await em.execute('update storage_folder set is_primary = true, updated_at = now() where id = ?', [id]);
      this.#record(ctx, em, access, 'storage_folder.primary_changed', folder, { previousFolderId: previous?.id ?? null });
    });
    return this.get(ctx, parent, params, id);
  }

  /**
   * Detaches the folder; the folder on the drive stays. When it was the primary, the oldest
   * remaining folder becomes primary, so a record with folders always has exactly one.
   */
  async detach(ctx: OperationContext, parent: ParentKind, params: Record<string, unknown>, id: string): Promise<void> {
    await db.writeTransaction(ctx.em, async (em) => {
      const access = await lockedFolderParent({ ...ctx, em }, parent, params);
      const folder = await this.#find(em, ctx.actor, access, id);
      await em.execute('delete from storage_folder where id = ?', [id]);
      let newPrimaryFolderId: string | null = null;
      if (folder.isPrimary) {
        const next = await db.queryOne<{ id: string }>(
          em,
          sql`update storage_folder set is_primary = true, updated_at = now() where id = (
                select f.id from storage_folder f where ${attachedTo('f', access)} order by f.created_at, f.id limit 1) returning id`,
        );
        newPrimaryFolderId = next?.id ?? null;
      }
      this.#record(ctx, em, access, 'storage_folder.detached', folder, folder.isPrimary ? { newPrimaryFolderId } : {});
    });
  }

  /** An attachment of this parent (404 naming it when it is another parent's, or none). */
  async #find(em: EntityManager, actor: Actor, access: ParentAccess, id: string): Promise<FolderRow> {
    const row = await db.queryOne<FolderRow>(
      em,
      sql`select ${columns} from storage_folder f where f.id = ${id} and f.organization_id = ${actor.organizationId} and ${attachedTo('f', access)}`,
    );
    if (!row) throw new errors.NotFoundError('Storage folder', id);
    return row;
  }

  /** Activity on the parent's project/study/assay, so the change shows in their feeds. */
  #record(ctx: OperationContext, em: EntityManager, access: ParentAccess, eventType: string, f: FolderRow, extra: Record<string, unknown>) {
    ctx.services.activity.record(em, ctx.actor, {
      eventType,
      projectId: access.projectId,
      studyId: access.studyId,
      assayId: access.assayId,
      data: { folderId: f.id, driveId: f.driveId, path: f.path, ...extra },
    });
  }
}
