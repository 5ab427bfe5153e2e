import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import { rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { GitProviderError, type GitProvider, type GitRepository } from './provider.ts';

const run = promisify(execFile);

/** One path segment of a group or repository name: no separators, no `.`/`..`, nothing hidden. */
const SEGMENT = /^[A-Za-z0-9_][A-Za-z0-9._-]*$/;

export interface LocalGitProviderOptions {
  rootPath: string;
  /** Timeout of one `git` run. */
  timeoutMs?: number;
}

/**
 * Bare repositories on a local path (a lab server, a NAS mount, the embedded default's data
 * dir): needs no outside service, only the `git` executable. A group is a directory under
 * `rootPath` (nested groups: `lab/imaging`); a repository is `<group>/<name>.git`, created with
 * `git init --bare`. Groups are made by whoever manages the directory, never by this provider.
 */
export class LocalGitProvider implements GitProvider {
  readonly #root: string;
  readonly #timeoutMs: number;

  constructor(opts: LocalGitProviderOptions) {
    this.#root = path.resolve(opts.rootPath);
    this.#timeoutMs = opts.timeoutMs ?? 30_000;
  }

  async groupExists(groupId: string): Promise<boolean> {
    const dir = this.#groupDir(groupId);
    return dir !== null && (await isDirectory(dir));
  }

  async findRepository(groupId: string, name: string): Promise<GitRepository | null> {
    const dir = this.#repoDir(groupId, name);
    // A bare repository has HEAD at its top level.
    if (!dir || !(await isFile(path.join(dir, 'HEAD')))) return null;
    return this.#repository(groupId, name, dir);
  }

  async createRepository(groupId: string, name: string): Promise<GitRepository> {
    const dir = this.#repoDir(groupId, name);
    if (!dir || !(await this.groupExists(groupId))) throw new GitProviderError('GROUP_NOT_FOUND', `Git group ${groupId} not found`);
    const existing = await this.findRepository(groupId, name);
    if (existing) return existing;
    // Made under a temporary name and renamed into place: the repository appears complete or
    // not at all (a crash leaves only a `.tmp-*` directory), and of concurrent creators one wins.
    const tmp = `${dir}.tmp-${crypto.randomUUID()}`;
    try {
      await run('git', ['init', '--bare', '--quiet', tmp], { timeout: this.#timeoutMs });
    } catch (err) {
      await rm(tmp, { recursive: true, force: true });
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') throw new GitProviderError('UNAVAILABLE', 'The git executable is not installed on the server', { cause: err });
      if ((err as { killed?: boolean }).killed) throw new GitProviderError('TIMEOUT', 'git init did not finish in time', { cause: err });
      throw new GitProviderError('UNAVAILABLE', `git init failed for repository ${name}`, { cause: err });
    }
    try {
      await rename(tmp, dir);
    } catch (err) {
      await rm(tmp, { recursive: true, force: true });
      const taken = await this.findRepository(groupId, name);
      if (taken) return taken;
      throw new GitProviderError('CONFLICT', `${name} exists in group ${groupId} and is not a bare repository`, { cause: err });
    }
    return this.#repository(groupId, name, dir);
  }

  #repository(groupId: string, name: string, dir: string): GitRepository {
    return { id: `${groupId}/${name}`, name, url: pathToFileURL(dir).href };
  }

  /** The group's directory, or null when the id could leave the root (absolute, `..`, empty segments). */
  #groupDir(groupId: string): string | null {
    const segments = groupId.split('/');
    if (!segments.every((s) => SEGMENT.test(s))) return null;
    return path.join(this.#root, ...segments);
  }

  #repoDir(groupId: string, name: string): string | null {
    const group = this.#groupDir(groupId);
    if (!group || !SEGMENT.test(name)) return null;
    return path.join(group, `${name}.git`);
  }
}

async function isDirectory(p: string): Promise<boolean> {
  try {
    return (await stat(p)).isDirectory();
  } catch {
    return false;
  }
}

async function isFile(p: string): Promise<boolean> {
  try {
    return (await stat(p)).isFile();
  } catch {
    return false;
  }
}
