import { errors, type KernelServices } from '../../core/public.ts';
import { DriveUnavailableError, PathOutsideDriveError, type FolderInfo } from './drivers/driver.ts';
import { useDriver, type DriveRow } from './drives.ts';
import { checkFolderName, normalizePath, PathSyntaxError } from './paths.ts';

/** Request fields named in 400s: `path` on attach, `storage.path` on project create. */
export interface FieldNames {
  driveId: string;
  path: string;
  name?: string;
}

/** A normalized path, or a 400 naming the field. */
export function pathOf(value: string, field: string): string {
  try {
    return normalizePath(value);
  } catch (err) {
    if (err instanceof PathSyntaxError) throw new errors.ValidationError([{ field, message: err.message }]);
    throw err;
  }
}

/** A checked folder name, or a 400 naming the field. */
export function nameOf(value: string, field: string): string {
  try {
    return checkFolderName(value);
  } catch (err) {
    if (err instanceof PathSyntaxError) throw new errors.ValidationError([{ field, message: err.message }]);
    throw err;
  }
}

/** 400 for a drive that did not answer within the request's limit. */
function unreachable(drive: DriveRow, err: DriveUnavailableError, field: string): errors.ValidationError {
  return new errors.ValidationError([{ field, message: `storage drive "${drive.name}" is not reachable: ${err.message}` }]);
}

/**
 * The folder at `path` on a reachable drive (attach, USE_EXISTING): 400 naming `path` when it
 * does not exist or leads outside the drive, 400 naming the drive field when the drive does not
 * answer within the request's limit.
 */
export async function existingFolder(services: KernelServices, drive: DriveRow, path: string, fields: FieldNames): Promise<FolderInfo> {
  let info: FolderInfo | null;
  try {
    info = await useDriver(services, drive, (d) => d.describe(path), { inRequest: true });
  } catch (err) {
    if (err instanceof DriveUnavailableError) throw unreachable(drive, err, fields.driveId);
    if (err instanceof PathOutsideDriveError) throw new errors.ValidationError([{ field: fields.path, message: `must stay inside the drive: ${err.message}` }]);
    throw err;
  }
  if (!info) throw new errors.ValidationError([{ field: fields.path, message: `folder "${path || '/'}" does not exist on storage drive "${drive.name}"` }]);
  return info;
}
