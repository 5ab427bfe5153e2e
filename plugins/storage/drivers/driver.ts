/**
 * The one interface every drive kind implements. Paths are normalized drive paths (paths.ts):
 * relative to the drive's root, `""` being the root. Every call is bounded by the drive's
 * timeout, so a hung NAS mount or an S3 endpoint that does not answer fails the call instead of
 * holding a request or a job forever.
 */
export interface FolderInfo {
  /** Normalized drive path; `""` is the drive root. */
  path: string;
  /** Last path segment (the drive root: the bucket or directory name). */
  name: string;
  /** Last modification the drive reports, ISO 8601, when it reports one. */
  modifiedAt: string | null;
}

export interface StorageDriver {
  folderExists(path: string): Promise<boolean>;
  /** Creates `name` under the existing folder `parent`; a folder already there is returned as is. */
  createFolder(parent: string, name: string): Promise<FolderInfo>;
  /** The folder at `path`, or null when there is none (a file is not a folder). */
  describe(path: string): Promise<FolderInfo | null>;
  /** Frees connections (S3 clients keep sockets open). */
  close(): void;
}

/** The drive did not answer usefully: down, too slow, root missing, credentials refused. */
export class DriveUnavailableError extends Error {
  override name = 'DriveUnavailableError';
}

/** A path that resolves outside the drive's root (a symlink pointing out of it). */
export class PathOutsideDriveError extends Error {
  override name = 'PathOutsideDriveError';
  constructor(path: string) {
    super(`"${path}" leads outside the drive`);
  }
}

/** `createFolder` under a parent that does not exist. */
export class FolderMissingError extends Error {
  override name = 'FolderMissingError';
  readonly path: string;
  constructor(path: string) {
    super(`folder "${path}" does not exist on the drive`);
    this.path = path;
  }
}

/** `createFolder` where a file (not a folder) has the name. */
export class NotAFolderError extends Error {
  override name = 'NotAFolderError';
  constructor(path: string) {
    super(`"${path}" exists on the drive but is not a folder`);
  }
}

/** Rejects with DriveUnavailableError when `work` takes longer than `ms`. */
export async function withTimeout<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DriveUnavailableError(`${what} did not answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
