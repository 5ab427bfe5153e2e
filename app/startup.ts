import fs from 'node:fs/promises';
import path from 'node:path';

/**
 * A start-up failure the operator can fix: its message is one line naming the cause and the
 * setting (from the operator contract) to change. Printed as is, never with a stack trace.
 */
export class StartupError extends Error {}

const errno = (err: unknown) => (err as NodeJS.ErrnoException | undefined)?.code;

/** The first line of an error's message, without the stack: what a one-line report can show. */
export function firstLine(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return (message.split('\n').find((l) => l.trim()) ?? '').trim() || (errno(err) ?? 'unknown error');
}

/**
 * Creates the data directory (private: it holds the database password, the sealing key and the
 * TLS key) and proves it writable, so that a bad LABDATA_DATA_DIR fails here, in one line, and
 * not half-way through initialising a database.
 */
export async function ensureDataDir(dataDir: string): Promise<void> {
  const fix = 'set LABDATA_DATA_DIR to a writable directory';
  try {
    await makeDirectory(dataDir);
  } catch (err) {
    throw new StartupError(`cannot create the data directory ${dataDir} (${errno(err) ?? firstLine(err)}): ${fix}`);
  }
  const probe = path.join(dataDir, `.write-test-${process.pid}-${Math.random().toString(36).slice(2)}`);
  try {
    await fs.writeFile(probe, '', { mode: 0o600 });
    await fs.unlink(probe);
  } catch (err) {
    throw new StartupError(`the data directory ${dataDir} is not writable (${errno(err) ?? firstLine(err)}): ${fix}`);
  }
}

/**
 * `mkdir -p` with mode 0700, one level at a time: Node's recursive mkdir retries for ever where
 * a directory cannot be created and yet is not there (`/proc/x`), and start-up would hang.
 */
async function makeDirectory(dir: string): Promise<void> {
  try {
    await fs.mkdir(dir, { mode: 0o700 });
  } catch (err) {
    if (errno(err) === 'EEXIST') return;
    const parent = path.dirname(dir);
    if (errno(err) !== 'ENOENT' || parent === dir) throw err;
    await makeDirectory(parent);
    await fs.mkdir(dir, { mode: 0o700 }).catch((again: unknown) => {
      if (errno(again) !== 'EEXIST') throw again;
    });
  }
}

/** `host:port/db` of a connection string: enough to recognise it, never the password. */
export function describeDatabaseUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname}${u.port ? ':' + u.port : ''}${u.pathname}`;
  } catch {
    return 'an unparsable URL';
  }
}

/** Why the database could not be used at start-up, with the setting that decides it. */
export function databaseFailure(err: unknown, databaseUrl: string | undefined): StartupError {
  if (err instanceof StartupError) return err;
  const code = errno(err);
  const reason = code && !firstLine(err).includes(code) ? `${code}: ${firstLine(err)}` : firstLine(err);
  if (databaseUrl) {
    return new StartupError(`cannot use the database at ${describeDatabaseUrl(databaseUrl)} (${reason}): check LABDATA_DATABASE_URL`);
  }
  return new StartupError(`the embedded PostgreSQL failed (${reason}): check LABDATA_DATA_DIR, or set LABDATA_DATABASE_URL to use another database`);
}

/** Why the HTTPS port could not be opened, with the setting that decides it. */
export function listenFailure(err: unknown, host: string, port: number): StartupError {
  const where = `${host}:${port}`;
  switch (errno(err)) {
    case 'EADDRINUSE':
      return new StartupError(`port ${port} on ${host} is already in use: set LABDATA_PORT to a free port (or stop the process using it)`);
    case 'EACCES':
      return new StartupError(`not allowed to listen on ${where}: set LABDATA_PORT to a port above 1023`);
    case 'EADDRNOTAVAIL':
      return new StartupError(`cannot listen on ${where}: the address is not on this machine; check LABDATA_HOST`);
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return new StartupError(`cannot listen on ${where}: the host name does not resolve; check LABDATA_HOST`);
    default:
      return new StartupError(`cannot listen on ${where} (${firstLine(err)}): check LABDATA_HOST and LABDATA_PORT`);
  }
}
