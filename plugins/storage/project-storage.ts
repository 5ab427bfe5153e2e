import { db, errors, type KernelServices, type OperationContext, sql } from '../../core/public.ts';
import { StepFailedError, type StepContext, type ProvisioningStep, provisioning } from '../../lib/integrations/index.ts';
import type { ProjectRecord } from '../projects/extensions.ts';
import { existingFolder, nameOf, pathOf } from './checks.ts';
import { DriveUnavailableError, FolderMissingError, NotAFolderError, PathOutsideDriveError } from './drivers/driver.ts';
import { defaultDrive, findDrive, projectRootOf, useDriver, type DriveRow } from './drives.ts';
import { insertAttachment } from './folders.ts';
import { childPath, folderNameFor, normalizePath } from './paths.ts';
import type { StorageFieldValue } from './schemas.ts';

/** The provisioning step that creates a folder on a drive. */
export const CREATE_FOLDER_STEP = 'storage.create-folder';

interface CreateFolderPayload {
  /** The attachment the folder is for (activity names it). */
  folderId: string;
  driveId: string;
  parent: string;
  name: string;
  /** Create the parent chain too (the default drive's project root, which is ours). */
  ensureParent: boolean;
}

/** Mode recorded in the attachment's activity: the spec's modes, or DEFAULT when `storage` was omitted. */
type Placement = 'DEFAULT' | 'CREATE_NEW' | 'USE_EXISTING';

/**
 * The project's primary folder at creation (spec, Project `storage`):
 * - omitted → a new folder in the organization's default cloud storage under its project root;
 * - `CREATE_NEW` → a new folder (`name`, default from the project code) under `path`;
 * - `USE_EXISTING` → the existing folder at `path` (checked now: 400 when it is not there);
 * - on the default drive `path` is ignored: the folder is made under the project root.
 * The attachment (primary) is written in the create transaction; a folder still to be made is
 * a provisioning step (job queue) except on the embedded default drive (see #provision).
 */
export class ProjectStorage {
  /** Projects whose `storage` field was given in this process's in-flight create transactions. */
  readonly #placed = new WeakSet<object>();
  readonly #services: KernelServices;

  constructor(services: KernelServices) {
    this.#services = services;
  }

  /** The `storage` field's save hook (inside the create transaction). */
  async save(ctx: OperationContext, project: ProjectRecord, value: StorageFieldValue): Promise<void> {
    if (value.name !== undefined && value.mode !== 'CREATE_NEW') {
      throw new errors.ValidationError([{ field: 'storage.name', message: 'is only allowed with mode CREATE_NEW' }]);
    }
    const drive = await findDrive(ctx.em, ctx.actor.organizationId, value.driveId);
    this.#placed.add(project);
    if (drive.isDefault) {
      // `path` is ignored on the default drive: the organization's project root is always used.
      if (value.name === undefined) return this.#provision(ctx, project, drive, projectRootOf(drive), folderNameFor(project.code, project.id), value.mode);
      // A chosen name may be taken (another project's folder): checked as on any drive.
      const name = nameOf(value.name, 'storage.name');
      await this.#precheck(ctx, drive, projectRootOf(drive), name);
      return this.#provision(ctx, project, drive, projectRootOf(drive), name, value.mode);
    }
    if (value.path === undefined) throw new errors.ValidationError([{ field: 'storage.path', message: 'is required unless driveId is the default cloud drive' }]);
    const path = pathOf(value.path, 'storage.path');
    if (value.mode === 'USE_EXISTING') {
      const info = await existingFolder(ctx.services, drive, path, { driveId: 'storage.driveId', path: 'storage.path' });
      await insertAttachment(ctx.em, ctx.services, ctx.actor, {
        parent: projectParent(project),
        driveId: drive.id,
        path,
        name: info.name,
        primary: true,
        data: { mode: 'USE_EXISTING' },
      });
      return;
    }
    const name = value.name !== undefined ? nameOf(value.name, 'storage.name') : folderNameFor(project.code, project.id);
    await this.#precheck(ctx, drive, path, name);
    await this.#provision(ctx, project, drive, path, name, 'CREATE_NEW');
  }

  /** Runs in every project create (after the fields): the default placement when `storage` was omitted. */
  async onCreate(ctx: OperationContext, project: ProjectRecord): Promise<void> {
    if (this.#placed.has(project)) return;
    const drive = await defaultDrive(ctx.em, ctx.actor.organizationId);
    await this.#provision(ctx, project, drive, projectRootOf(drive), folderNameFor(project.code, project.id), 'DEFAULT');
  }

  /**
   * CREATE_NEW, asked of the drive at once when it answers within the request's limit: the parent
   * must exist (400) and the new folder must not (400: attach it with USE_EXISTING instead). A
   * drive that does not answer now is not an error: the provisioning step retries it.
   */
  async #precheck(ctx: OperationContext, drive: DriveRow, parent: string, name: string): Promise<void> {
    const target = childPath(parent, name);
    let found: { parent: boolean; target: boolean } | undefined;
    try {
      found = await useDriver(ctx.services, drive, async (d) => ({ parent: await d.folderExists(parent), target: await d.folderExists(target) }), { inRequest: true });
    } catch (err) {
      if (err instanceof PathOutsideDriveError) throw new errors.ValidationError([{ field: 'storage.path', message: `must stay inside the drive: ${err.message}` }]);
      if (!(err instanceof DriveUnavailableError)) throw err;
      ctx.log.warn({ driveId: drive.id, reason: err.message }, 'storage drive not reachable at project creation; the folder is left to provisioning');
    }
    if (found && !found.parent && !drive.isDefault) throw new errors.ValidationError([{ field: 'storage.path', message: `folder "${parent || '/'}" does not exist on storage drive "${drive.name}"` }]);
    if (found?.target) {
      throw new errors.ValidationError([{ field: 'storage.name', message: `folder "${target}" already exists on storage drive "${drive.name}": attach it with mode USE_EXISTING` }]);
    }
    await claimNewFolder(ctx, drive, target);
  }

  /**
   * The primary attachment now; the folder itself now on the embedded default drive (a directory
   * under the service's own data dir: nothing external to wait for, so the project starts ACTIVE),
   * else through a provisioning step, so a slow or unreachable drive never blocks the request.
   */
  async #provision(ctx: OperationContext, project: ProjectRecord, drive: DriveRow, parent: string, name: string, mode: Placement): Promise<void> {
    const folderId = await insertAttachment(ctx.em, ctx.services, ctx.actor, {
      parent: projectParent(project),
      driveId: drive.id,
      path: childPath(parent, name),
      name,
      primary: true,
      data: { mode },
    });
    const payload: CreateFolderPayload = { folderId, driveId: drive.id, parent, name, ensureParent: drive.isDefault };
    if (drive.isDefault && drive.kind === 'LOCAL') {
      try {
        const info = await makeFolder(ctx.services, drive, payload);
        ctx.services.activity.record(ctx.em, ctx.actor, {
          eventType: 'storage_folder.created',
          projectId: project.id,
          data: { folderId, driveId: drive.id, path: info.path },
        });
        return;
      } catch (err) {
        ctx.log.warn({ err, driveId: drive.id }, 'default drive folder not created at once; left to provisioning');
      }
    }
    await provisioning(ctx.services).add(ctx, { kind: 'project', id: project.id }, { step: CREATE_FOLDER_STEP, payload: { ...payload } });
  }

  /**
   * The step's executor (job queue): creates the folder if it is missing, so a rerun after a
   * crash or a retry never makes a second one. Failures that retrying cannot fix (the parent was
   * removed, a file has the name, the drive is gone) fail the step at once.
   */
  createFolder = async (sctx: StepContext, step: ProvisioningStep) => {
    const p = step.payload as unknown as CreateFolderPayload;
    const drive = await findDrive(sctx.em, step.organizationId, p.driveId).catch(() => {
      throw new StepFailedError(`storage drive ${p.driveId} no longer exists`);
    });
    const info = await makeFolder(this.#services, drive, p).catch((err: unknown) => {
      if (err instanceof FolderMissingError || err instanceof NotAFolderError || err instanceof PathOutsideDriveError) {
        throw new StepFailedError(`${err.message} (storage drive "${drive.name}")`);
      }
      if (err instanceof DriveUnavailableError) throw new Error(`storage drive "${drive.name}" is not reachable: ${err.message}`);
      throw err;
    });
    sctx.activity('storage_folder.created', { folderId: p.folderId, driveId: drive.id, path: info.path });
    return { path: info.path };
  };
}

/**
 * A new folder's path is claimed in the create transaction: the step that makes the folder
 * takes one that exists as its own (a rerun must), so two creates naming the same new folder
 * at once would both get it. The path's lock (held until commit) orders them, and the second
 * finds the first's attachment: 400, as for a folder that already exists.
 */
async function claimNewFolder(ctx: OperationContext, drive: DriveRow, path: string): Promise<void> {
  await db.query(ctx.em, sql`select pg_advisory_xact_lock(hashtextextended(${`storage-folder:${drive.id}:${path}`}, 0))`);
  const taken = await db.queryOne(ctx.em, sql`select 1 from storage_folder where drive_id = ${drive.id} and path = ${path} limit 1`);
  if (taken) {
    throw new errors.ValidationError([{ field: 'storage.name', message: `folder "${path}" already belongs to a record on storage drive "${drive.name}": attach it with mode USE_EXISTING` }]);
  }
}

/** Creates the folder (and, on the default drive, the project root chain) if missing: idempotent. */
async function makeFolder(services: KernelServices, drive: DriveRow, p: CreateFolderPayload) {
  return useDriver(services, drive, async (d) => {
    if (p.ensureParent) {
      let at = '';
      for (const segment of p.parent === '' ? [] : normalizePath(p.parent).split('/')) at = (await d.createFolder(at, segment)).path;
    }
    return d.createFolder(p.parent, p.name);
  });
}

function projectParent(project: ProjectRecord) {
  return { kind: 'project', id: project.id, projectId: project.id, studyId: null, assayId: null };
}
