import { db, errors, fetchPage, type OperationContext, type PageRequest, raw, sql } from '../../core/public.ts';

/**
 * Shared storage folders: folders on the organization's drives that are shared with the whole
 * organization (a lab's common data area, a reference library), as opposed to folders attached
 * to one project, study or assay. They are provisioned by the bootstrap file
 * (`storageDrives[].sharedFolders`) and read-only through the API; every member of the
 * organization sees them.
 */
const columns = raw(`s.id, s.organization_id as "organizationId", s.drive_id as "driveId", s.path, s.name, s.description, s.created_at as "createdAt"`);

interface SharedFolderRow {
  id: string;
  organizationId: string;
  driveId: string;
  path: string;
  name: string;
  description: string | null;
  createdAt: Date | string;
}

const toDto = (s: SharedFolderRow) => ({
  id: s.id,
  organizationId: s.organizationId,
  driveId: s.driveId,
  path: s.path,
  name: s.name,
  description: s.description,
  createdAt: db.isoDate(s.createdAt)!,
});

export const sharedFolderSort = {
  fields: { name: 's.name', path: 's.path', createdAt: 's.created_at' },
  default: ['name,asc'],
  tiebreaker: 's.id',
};

export class SharedFolderService {
  async list(ctx: OperationContext, page: PageRequest) {
    const from = sql`from shared_storage_folder s where s.organization_id = ${ctx.actor.organizationId}`;
    const { rows, total } = await fetchPage<SharedFolderRow>(ctx.em, { columns, from }, page);
    return { items: rows.map(toDto), total };
  }

  async get(ctx: OperationContext, id: string) {
    const row = await db.queryOne<SharedFolderRow>(
      ctx.em,
      sql`select ${columns} from shared_storage_folder s where s.id = ${id} and s.organization_id = ${ctx.actor.organizationId}`,
    );
    if (!row) throw new errors.NotFoundError('Shared storage folder', id);
    return toDto(row);
  }
}
