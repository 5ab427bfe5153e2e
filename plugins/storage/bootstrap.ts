import crypto from 'node:crypto';
import path from 'node:path';
import { type BootstrapSection, errors, schemas } from '../../core/public.ts';
import { storageRootProblem, vendorUrlProblem, type OutboundPolicy } from '../../lib/integrations/index.ts';
import type { StoredSettings } from './drives.ts';
import { baseName, checkFolderName, normalizePath, PathSyntaxError } from './paths.ts';
import { DriveItem } from './schemas.ts';

const S3_FIELDS = ['endpoint', 'region', 'bucket', 'prefix', 'forcePathStyle'] as const;

/** The kind-specific rules the schema cannot say: which settings each kind needs and refuses, and where a drive may point. */
function kindErrors(item: DriveItem, policy: OutboundPolicy): errors.FieldError[] {
  const problems: errors.FieldError[] = [];
  if (item.kind === 'LOCAL') {
    const rootProblem = item.rootPath === undefined ? 'is required for a LOCAL drive' : storageRootProblem(item.rootPath);
    if (rootProblem) problems.push({ field: 'rootPath', message: rootProblem });
    for (const f of S3_FIELDS) if (item[f] !== undefined) problems.push({ field: f, message: 'is only for S3 drives' });
    if (item.credentials) problems.push({ field: 'credentials', message: 'is only for S3 drives' });
  } else {
    for (const f of ['endpoint', 'region', 'bucket'] as const) if (item[f] === undefined) problems.push({ field: f, message: 'is required for an S3 drive' });
    const endpointProblem = item.endpoint === undefined ? undefined : vendorUrlProblem(item.endpoint, policy);
    if (endpointProblem) problems.push({ field: 'endpoint', message: endpointProblem });
    if (!item.credentials) problems.push({ field: 'credentials', message: 'is required for an S3 drive ({accessKeyId, secretAccessKey})' });
    if (item.rootPath !== undefined) problems.push({ field: 'rootPath', message: 'is only for LOCAL drives' });
  }
  if (item.projectRoot !== undefined) {
    try {
      normalizePath(item.projectRoot);
    } catch (err) {
      if (err instanceof PathSyntaxError) problems.push({ field: 'projectRoot', message: err.message });
    }
  }
  for (const [i, folder] of (item.sharedFolders ?? []).entries()) {
    try {
      normalizePath(folder.path);
      if (folder.name !== undefined) checkFolderName(folder.name);
    } catch (err) {
      if (err instanceof PathSyntaxError) problems.push({ field: `sharedFolders.${i}`, message: err.message });
    }
  }
  return problems;
}

/**
 * The bootstrap file's `storageDrives` section (README, "Bootstrap"): `{ref, organization, name,
 * kind, <settings>, credentials?, default?, sharedFolders?}` per item; the settings may also be
 * given as a `settings` object. Credentials are sealed with the deployment's secret key. A drive
 * with `default: true` becomes its organization's default cloud storage (replacing the embedded
 * one). Drives are not contacted here: a NAS may be mounted later.
 */
export const storageDrivesSection: BootstrapSection = async (ctx, items) => {
  const out: Record<string, { id: string; sharedFolders?: Record<string, { id: string }> }> = {};
  for (const [i, raw] of items.entries()) {
    const where = ctx.label('storageDrives', raw, i);
    const organizationId = await ctx.organization(raw.organization, where);
    const { ref, organization: _organization, settings, ...rest } = raw;
    if (settings !== undefined && (typeof settings !== 'object' || settings === null || Array.isArray(settings))) {
      throw new errors.BootstrapError(`${where}: settings must be an object`);
    }
    const given: Record<string, unknown> = { ...(settings as object | undefined), ...rest };
    // Allow-list: the fields of the item schema (a kind's public settings and the item's own
    // fields); every other field is a secret, sealed with the credentials.
    const body: Record<string, unknown> = {};
    const secret: Record<string, unknown> = {};
    for (const [field, value] of Object.entries(given)) (field in DriveItem.properties ? body : secret)[field] = value;
    const problems: errors.FieldError[] = schemas.validateInput(DriveItem, body);
    if (!problems.length) problems.push(...kindErrors(body as DriveItem, { allowLinkLocal: ctx.services.config.vendorAllowLinkLocal }));
    const twice = Object.keys(secret).find((field) => (body as DriveItem).credentials && field in (body as DriveItem).credentials!);
    if (twice) problems.push({ field: twice, message: 'is also in credentials: give it once, in credentials' });
    if (problems.length) throw new errors.BootstrapError(`${where}: ${problems.map((e) => `${e.field} ${e.message}`).join('; ')}`);
    const item = body as DriveItem;

    const stored: StoredSettings =
      item.kind === 'LOCAL'
        ? { rootPath: path.resolve(item.rootPath!) }
        : { endpoint: item.endpoint, region: item.region, bucket: item.bucket, prefix: item.prefix ?? '', forcePathStyle: item.forcePathStyle ?? false };
    if (item.projectRoot !== undefined) stored.projectRoot = normalizePath(item.projectRoot);
    if (item.timeoutSeconds !== undefined) stored.timeoutSeconds = item.timeoutSeconds;
    const credentials = item.credentials || Object.keys(secret).length ? ctx.services.secrets.seal({ ...item.credentials, ...secret }) : null;
    const id = crypto.randomUUID();
    if (item.default) await ctx.em.execute('update storage_drive set is_default = false, updated_at = now() where organization_id = ? and is_default', [organizationId]);
    await ctx.em.execute(
      `insert into storage_drive (id, organization_id, name, kind, settings, credentials, is_default) values (?, ?, ?, ?, ?::jsonb, ?, ?)`,
      [id, organizationId, item.name, item.kind, JSON.stringify(stored), credentials, item.default ?? false],
    );

    const shared: Record<string, { id: string }> = {};
    const paths = new Set<string>();
    for (const folder of item.sharedFolders ?? []) {
      const folderPath = normalizePath(folder.path);
      if (paths.has(folderPath)) throw new errors.BootstrapError(`${where}: shared folder "${folderPath || '/'}" is listed twice`);
      paths.add(folderPath);
      if (folder.ref !== undefined && shared[folder.ref]) throw new errors.BootstrapError(`${where}: shared folder ref "${folder.ref}" is used twice`);
      const folderId = crypto.randomUUID();
      await ctx.em.execute(
        `insert into shared_storage_folder (id, organization_id, drive_id, path, name, description) values (?, ?, ?, ?, ?, ?)`,
        [folderId, organizationId, id, folderPath, folder.name ?? baseName(folderPath, item.name), folder.description ?? null],
      );
      if (folder.ref !== undefined) shared[folder.ref] = { id: folderId };
    }
    if (typeof ref === 'string') out[ref] = Object.keys(shared).length ? { id, sharedFolders: shared } : { id };
  }
  return out;
};
