/**
 * Directories the service may use as the root of a storage drive or of local Git repositories:
 * never the filesystem root or a system directory, where it would create folders (or make them
 * visible as a drive) among the operating system's own files.
 */
import fs from 'node:fs';
import path from 'node:path';

/** Never a root themselves; data directories usually live below them (/srv/lab-nas, /var/lib/labdata). */
const SYSTEM_DIRS = ['/home', '/media', '/mnt', '/opt', '/root', '/run', '/srv', '/var', '/snap', '/private', '/Users', '/Volumes', '/Applications', '/Library'];
/** Nothing below these is ever a data root. */
const SYSTEM_TREES = ['/bin', '/boot', '/dev', '/etc', '/lib', '/lib32', '/lib64', '/libx32', '/proc', '/sbin', '/sys', '/usr', '/System', '/private/etc', '/private/var/db', '/var/lib/dpkg', '/var/run', '/var/lock'];

function systemDirectory(dir: string): string | undefined {
  if (dir === path.parse(dir).root) return 'must not be the filesystem root';
  if (SYSTEM_DIRS.includes(dir)) return `must not be the system directory ${dir}`;
  const tree = SYSTEM_TREES.find((t) => dir === t || dir.startsWith(t + '/'));
  return tree && `must not be in the system directory ${tree}`;
}

/**
 * Why `value` may not be a storage or Git root, or undefined when it may: an absolute path that is
 * neither the filesystem root nor a system directory, also after following symlinks (a link to
 * /etc is /etc).
 */
export function storageRootProblem(value: unknown): string | undefined {
  if (typeof value !== 'string' || !value.trim()) return 'must be an absolute path';
  if (!path.isAbsolute(value)) return 'must be an absolute path';
  const resolved = path.resolve(value);
  let real = resolved;
  try {
    real = fs.realpathSync(resolved);
  } catch {
    // Not there yet (a NAS not mounted now): judged by its name.
  }
  return systemDirectory(resolved) ?? systemDirectory(real);
}
