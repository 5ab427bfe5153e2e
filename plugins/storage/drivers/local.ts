import fs from 'node:fs/promises';
import path from 'node:path';
import { baseName, childPath } from '../paths.ts';
import { DriveUnavailableError, FolderMissingError, NotAFolderError, PathOutsideDriveError, withTimeout, type FolderInfo, type StorageDriver } from './driver.ts';

export interface LocalDriverOptions {
  rootPath: string;
  timeoutMs: number;
  /**
   * Create the root when it is missing, provided this directory (the data dir) exists: only for
   * the embedded default drive, whose root is ours. A missing root of any other drive means its
   * mount is gone: the drive is unavailable.
   */
  createRootUnder?: string;
}

const code = (err: unknown) => (err as NodeJS.ErrnoException).code;

/**
 * A directory tree on the server (a lab NAS mount, the embedded default storage). Every path is
 * resolved with realpath and must stay under the root's realpath, so neither `..` (already
 * refused by paths.ts) nor a symlink can reach outside the drive.
 */
export class LocalDriver implements StorageDriver {
  readonly #opts: LocalDriverOptions;

  constructor(opts: LocalDriverOptions) {
    if (!path.isAbsolute(opts.rootPath)) throw new Error('a LOCAL drive needs an absolute rootPath');
    this.#opts = opts;
  }

  folderExists(p: string): Promise<boolean> {
    return this.#bounded(async () => (await this.#describe(p)) !== null);
  }

  describe(p: string): Promise<FolderInfo | null> {
    return this.#bounded(() => this.#describe(p));
  }

  createFolder(parent: string, name: string): Promise<FolderInfo> {
    return this.#bounded(async () => {
      const parentReal = await this.#resolve(parent);
      if (parentReal === null || !(await isDirectory(parentReal))) throw new FolderMissingError(parent);
      const target = childPath(parent, name);
      try {
        await fs.mkdir(path.join(parentReal, name));
      } catch (err) {
        if (code(err) !== 'EEXIST') throw unavailable(err);
      }
      // Already there (an earlier attempt, or someone else): fine if it is a folder inside the drive.
      const info = await this.#describe(target);
      if (!info) throw new NotAFolderError(target);
      return info;
    });
  }

  close(): void {}

  async #describe(p: string): Promise<FolderInfo | null> {
    const real = await this.#resolve(p);
    if (real === null) return null;
    const stat = await fs.stat(real).catch(() => null);
    if (!stat?.isDirectory()) return null;
    return { path: p, name: baseName(p, path.basename(this.#opts.rootPath)), modifiedAt: stat.mtime.toISOString() };
  }

  /** The real absolute path of a drive path, null when it does not exist. */
  async #resolve(p: string): Promise<string | null> {
    const root = await this.#root();
    let real: string;
    try {
      real = await fs.realpath(path.join(root, ...(p === '' ? [] : p.split('/'))));
    } catch (err) {
      if (code(err) === 'ENOENT' || code(err) === 'ENOTDIR') return null;
      throw unavailable(err);
    }
    if (real !== root && !real.startsWith(root + path.sep)) throw new PathOutsideDriveError(p);
    return real;
  }

  async #root(): Promise<string> {
    const { rootPath, createRootUnder } = this.#opts;
    try {
      if (createRootUnder && (await isDirectory(createRootUnder))) await fs.mkdir(rootPath, { recursive: true });
      const real = await fs.realpath(rootPath);
      if (!(await isDirectory(real))) throw new DriveUnavailableError(`the drive root ${rootPath} is not a directory`);
      return real;
    } catch (err) {
      if (err instanceof DriveUnavailableError) throw err;
      if (code(err) === 'ENOENT') throw new DriveUnavailableError(`the drive root ${rootPath} does not exist (not mounted?)`);
      throw unavailable(err);
    }
  }

  #bounded<T>(work: () => Promise<T>): Promise<T> {
    return withTimeout(work(), this.#opts.timeoutMs, 'the drive');
  }
}

async function isDirectory(real: string): Promise<boolean> {
  return (await fs.stat(real).catch(() => null))?.isDirectory() ?? false;
}

function unavailable(err: unknown): DriveUnavailableError {
  return new DriveUnavailableError(`the drive answered ${code(err) ?? (err as Error).message}`);
}
