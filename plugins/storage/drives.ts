import crypto from 'node:crypto';
import path from 'node:path';
import { db, type EntityManager, errors, fetchPage, type KernelServices, type OperationContext, type PageRequest, raw, sql } from '../../core/public.ts';
import { DriveUnavailableError, type StorageDriver } from './drivers/driver.ts';
import { LocalDriver } from './drivers/local.ts';
import { S3Driver, type S3Credentials, type S3Settings } from './drivers/s3.ts';
import type { DriveKind } from './schemas.ts';

/** Seconds one call to a drive may take unless its settings say otherwise. */
export const DEFAULT_TIMEOUT_SECONDS = 10;
/** Where projects get their folder on a default drive unless its settings say otherwise. */
export const DEFAULT_PROJECT_ROOT = 'projects';
/**
 * Synchronous checks in a request (USE_EXISTING, attach) wait at most this long, so a slow drive
 * holds a request for seconds, never for minutes.
 */
const REQUEST_CHECK_MS = 5000;

/** A drive row (credentials still sealed). */
export interface DriveRow {
  id: string;
  organizationId: string;
  name: string;
  kind: DriveKind;
  settings: StoredSettings;
  credentials: string | null;
  isDefault: boolean;
  createdAt: Date | string;
  updatedAt: Date | string;
}

/** What `settings` holds in the table (README, "Drive kinds"). */
export interface StoredSettings extends Partial<S3Settings> {
  rootPath?: string;
  projectRoot?: string;
  timeoutSeconds?: number;
  /**
   * The embedded default drive: its root is `<dataDir>/storage/<organizationId>`, computed from
   * the configuration at each use (so moving the data dir moves it) and created when missing.
   */
  managed?: boolean;
}

const columns = raw(`d.id, d.organization_id as "organizationId", d.name, d.kind, d.settings, d.credentials,
  d.is_default as "isDefault", d.created_at as "createdAt", d.updated_at as "updatedAt"`);

export const driveSort = {
  fields: { name: 'd.name', createdAt: 'd.created_at', kind: 'd.kind' },
  default: ['name,asc'],
  tiebreaker: 'd.id',
};

export const timeoutMs = (d: DriveRow) => Math.round((d.settings.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS) * 1000);
export const projectRootOf = (d: DriveRow) => d.settings.projectRoot ?? DEFAULT_PROJECT_ROOT;

function rootPathOf(services: KernelServices, d: DriveRow): string | undefined {
  return d.settings.managed ? path.join(services.config.dataDir, 'storage', d.organizationId) : d.settings.rootPath;
}

/** The drive as both surfaces return it: settings without credentials. */
export function toDriveDto(services: KernelServices, d: DriveRow) {
  const s = d.settings;
  const settings =
    d.kind === 'LOCAL'
      ? { rootPath: rootPathOf(services, d) }
      : { endpoint: s.endpoint, region: s.region, bucket: s.bucket, prefix: s.prefix ?? '', forcePathStyle: s.forcePathStyle ?? false };
  return {
    id: d.id,
    organizationId: d.organizationId,
    name: d.name,
    kind: d.kind,
    isDefault: d.isDefault,
    settings: { ...settings, projectRoot: projectRootOf(d), timeoutSeconds: s.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS },
    hasCredentials: d.credentials !== null,
    createdAt: db.isoDate(d.createdAt)!,
    updatedAt: db.isoDate(d.updatedAt)!,
  };
}

/**
 * Storage drives: lookups scoped to an organization, the embedded default drive, and the driver
 * that speaks to a drive.
 */
export class DriveService {
  async list(ctx: OperationContext, page: PageRequest) {
    await ensureDefaultDrive(ctx.em, ctx.actor.organizationId);
    const from = sql`from storage_drive d where d.organization_id = ${ctx.actor.organizationId}`;
    const { rows, total } = await fetchPage<DriveRow>(ctx.em, { columns, from }, page);
    return { items: rows.map((d) => toDriveDto(ctx.services, d)), total };
  }

  async get(ctx: OperationContext, id: string) {
    await ensureDefaultDrive(ctx.em, ctx.actor.organizationId);
    return toDriveDto(ctx.services, await findDrive(ctx.em, ctx.actor.organizationId, id));
  }
}

/** A drive of the organization, or a 404 naming it (another organization's drive included). */
export async function findDrive(em: EntityManager, organizationId: string, id: string): Promise<DriveRow> {
  const row = await db.queryOne<DriveRow>(em, sql`select ${columns} from storage_drive d where d.id = ${id} and d.organization_id = ${organizationId}`);
  if (!row) throw new errors.NotFoundError('Storage drive', id);
  return row;
}

/**
 * The organization's default cloud storage. Every organization has one: unless the bootstrap
 * file named another, it is the embedded LOCAL drive under the data dir, stored on first use
 * (the unique index on default drives makes concurrent first uses agree on one row).
 */
export async function defaultDrive(em: EntityManager, organizationId: string): Promise<DriveRow> {
  await ensureDefaultDrive(em, organizationId);
  return (await db.queryOne<DriveRow>(em, sql`select ${columns} from storage_drive d where d.organization_id = ${organizationId} and d.is_default`))!;
}

async function ensureDefaultDrive(em: EntityManager, organizationId: string): Promise<void> {
  const settings: StoredSettings = { managed: true, projectRoot: DEFAULT_PROJECT_ROOT };
  await em.execute(
    `insert into storage_drive (id, organization_id, name, kind, settings, is_default)
       select ?, ?, 'Default cloud storage', 'LOCAL', ?::jsonb, true
        where not exists (select 1 from storage_drive where organization_id = ? and is_default)
     on conflict do nothing`,
    [crypto.randomUUID(), organizationId, JSON.stringify(settings), organizationId],
  );
}

export interface DriverOptions {
  /** Bound every call by the request-time limit instead of the drive's own timeout. */
  inRequest?: boolean;
}

/** A driver for the drive; the caller closes it (`useDriver` does). */
export function driverFor(services: KernelServices, d: DriveRow, opts: DriverOptions = {}): StorageDriver {
  const ms = opts.inRequest ? Math.min(timeoutMs(d), REQUEST_CHECK_MS) : timeoutMs(d);
  if (d.kind === 'LOCAL') {
    const rootPath = rootPathOf(services, d)!;
    return new LocalDriver({ rootPath, timeoutMs: ms, createRootUnder: d.settings.managed ? services.config.dataDir : undefined });
  }
  let credentials: S3Credentials | null = null;
  try {
    if (d.credentials) credentials = services.secrets.open<S3Credentials>(d.credentials);
  } catch (err) {
    // A changed secret key: the drive cannot be used until its credentials are provisioned again.
    throw new DriveUnavailableError((err as Error).message);
  }
  return new S3Driver(d.settings as S3Settings, credentials, ms);
}

/** Runs `work` with a driver for the drive and closes it afterwards. */
export async function useDriver<T>(services: KernelServices, d: DriveRow, work: (driver: StorageDriver) => Promise<T>, opts: DriverOptions = {}): Promise<T> {
  const driver = driverFor(services, d, opts);
  try {
    return await work(driver);
  } finally {
    driver.close();
  }
}
