/**
 * Folder paths on a drive, as the API takes and returns them: relative to the drive's root,
 * segments separated by `/`, no empty, `.` or `..` segment (so a path can never leave its
 * drive, whatever the driver), no control characters or backslashes. `""` is the drive root.
 * Input may carry leading/trailing slashes (`/lab/2024/` = `lab/2024`); they are dropped.
 */

export const MAX_PATH_LENGTH = 1024;
export const MAX_NAME_LENGTH = 255;

/** Why a path or a folder name is refused (the message completes "path ..."). */
export class PathSyntaxError extends Error {
  override name = 'PathSyntaxError';
}

/** The normalized form of `input`, or a PathSyntaxError. */
export function normalizePath(input: string): string {
  if (input.length > MAX_PATH_LENGTH) throw new PathSyntaxError(`must be at most ${MAX_PATH_LENGTH} characters`);
  const trimmed = input.replace(/^\/+|\/+$/g, '');
  if (trimmed === '') return '';
  for (const segment of trimmed.split('/')) checkSegment(segment, 'must not contain');
  return trimmed;
}

/** A folder name: exactly one path segment. */
export function checkFolderName(name: string): string {
  if (name.length > MAX_NAME_LENGTH) throw new PathSyntaxError(`must be at most ${MAX_NAME_LENGTH} characters`);
  if (name.includes('/')) throw new PathSyntaxError('must be a single folder name (no "/")');
  checkSegment(name, 'must not be');
  return name;
}

/** Bytes a folder name may take on the drives served (the common file-system limit, and S3's segment sense). */
const MAX_SEGMENT_BYTES = 255;

function checkSegment(segment: string, verb: string): void {
  if (segment === '') throw new PathSyntaxError(`${verb} an empty segment ("//")`);
  // A name the drive cannot hold is a mistake in the input, not a drive that is down (ENAMETOOLONG).
  if (Buffer.byteLength(segment) > MAX_SEGMENT_BYTES) {
    throw new PathSyntaxError(verb === 'must not be' ? `must be at most ${MAX_SEGMENT_BYTES} bytes (UTF-8)` : `must not contain a folder name over ${MAX_SEGMENT_BYTES} bytes (UTF-8)`);
  }
  if (segment === '.' || segment === '..') throw new PathSyntaxError(`${verb} "${segment}"`);
  if (segment.trim() === '') throw new PathSyntaxError(`${verb} a blank segment`);
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f\\]/.test(segment)) throw new PathSyntaxError('must not contain control characters or "\\"');
}

/** `parent` + `name` as a normalized path. */
export function childPath(parent: string, name: string): string {
  return parent === '' ? name : `${parent}/${name}`;
}

/** The last segment (the folder's name); the drive root is named by the drive. */
export function baseName(path: string, rootName: string): string {
  return path === '' ? rootName : path.slice(path.lastIndexOf('/') + 1);
}

/**
 * A folder name made from a project's code (the default name of a project's primary folder):
 * characters outside letters, digits, `-`, `_` and `.` become `-`, and the id's first block is
 * appended so two projects with one code never share a folder.
 */
export function folderNameFor(code: string, id: string): string {
  const base = code
    .normalize('NFKD')
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .replace(/^[-.]+|-+$/g, '')
    .slice(0, 64);
  const suffix = id.slice(0, 8);
  return base ? `${base}-${suffix}` : `project-${suffix}`;
}
