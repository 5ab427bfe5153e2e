import { definePlugin, defineRead, defineWrite, schemas, withArticle } from '../../core/public.ts';
import { cascadeWithParents, parentParam, parentParams, parentProperties, parentKinds } from '../../lib/records/index.ts';
import { provisioning } from '../../lib/integrations/index.ts';
import { projectExtensions } from '../projects/extensions.ts';
import { storageDrivesSection } from './bootstrap.ts';
import { driveSort } from './drives.ts';
import { SharedStorageFolder, StorageDrive, StorageFolder } from './entities.ts';
import { events } from './events.ts';
import { folderSort } from './folders.ts';
import { migrations } from './migrations.ts';
import { CREATE_FOLDER_STEP } from './project-storage.ts';
import { AttachBody, PatchBody, SharedStorageFolderSchema, StorageDriveSchema, StorageField, storageFolderSchema, type StorageFieldValue } from './schemas.ts';
import { storageServices } from './service.ts';
import { sharedFolderSort } from './shared-folders.ts';

const tags = ['Storage'];

/**
 * Storage: the organization's drives (LOCAL directory trees, S3 buckets), the project's primary
 * folder at creation (the `storage` field), folder attachments of projects, studies and assays,
 * and folders shared with the whole organization.
 */
export default definePlugin({
  name: 'storage',
  version: '1.0.0',
  description: 'Storage drives (LOCAL, S3), project primary folders, folder attachments, shared folders',
  tags: {
    Storage: 'Storage drives, shared folders and the folders attached to projects, studies and assays.',
  },
  dependsOn: ['projects'],
  entities: [StorageDrive, StorageFolder, SharedStorageFolder],
  migrations,
  events,
  bootstrap: { storageDrives: storageDrivesSection },
  setup(ctx) {
    const state = storageServices(ctx.services);
    const { projectStorage } = state;
    const projects = ctx.use(projectExtensions);
    projects.addField({
      name: 'storage',
      plugin: 'storage',
      schema: StorageField,
      save: (c, project, value) => projectStorage.save(c, project, value as StorageFieldValue),
    });
    // Every project gets a primary folder: in the default cloud storage when `storage` was omitted.
    projects.onCreate((c, project) => projectStorage.onCreate(c, project));
    // About a minute of retries (2, 4, 8, 16, 32 s) before the project shows INITIALIZATION_FAILED.
    provisioning(ctx.services).executor(CREATE_FOLDER_STEP, projectStorage.createFolder, { retryLimit: 5, retryDelaySeconds: 2, retryBackoff: true });
    return state;
  },
  register(ctx, { drives, folders, shared }) {
    ctx.read(
      defineRead({
        name: 'list_storage_drives',
        description: "List the organization's storage drives (credentials are never shown).",
        path: '/storage-drives',
        tags,
        response: StorageDriveSchema,
        paged: { sort: driveSort },
        run: (c, _input, page) => drives.list(c, page),
      }),
    );
    ctx.read(
      defineRead({
        name: 'get_storage_drive',
        description: 'Get one storage drive by id (credentials are never shown).',
        path: '/storage-drives/:id',
        tags,
        params: schemas.IdParams,
        response: StorageDriveSchema,
        run: (c, { id }) => drives.get(c, id),
      }),
    );
    ctx.read(
      defineRead({
        name: 'list_shared_storage_folders',
        description: 'List the storage folders shared with the whole organization.',
        path: '/shared-storage-folders',
        tags,
        response: SharedStorageFolderSchema,
        paged: { sort: sharedFolderSort },
        run: (c, _input, page) => shared.list(c, page),
      }),
    );
    ctx.read(
      defineRead({
        name: 'get_shared_storage_folder',
        description: 'Get one shared storage folder by id.',
        path: '/shared-storage-folders/:id',
        tags,
        params: schemas.IdParams,
        response: SharedStorageFolderSchema,
        run: (c, { id }) => shared.get(c, id),
      }),
    );

    // Deleting a project, study or assay detaches its folders (the folders on the drives stay).
    cascadeWithParents(ctx.services, 'storage_folder');
    const response = storageFolderSchema(parentProperties(ctx.services));
    for (const parent of parentKinds(ctx.services).all()) {
      const base = `/${parent.segment}/:${parentParam(parent)}/storage-folders`;
      const one = `${base}/:folderId`;
      const ListParams = parentParams(parent);
      const FolderParams = parentParams(parent, 'folderId');
      ctx.read(
        defineRead({
          name: `list_${parent.kind}_storage_folders`,
          description: `List the storage folders attached to one ${parent.kind} (folder metadata only; primary first).`,
          path: base,
          tags,
          params: ListParams,
          response,
          paged: { sort: folderSort },
          run: (c, params, page) => folders.list(c, parent, params, page),
        }),
      );
      ctx.read(
        defineRead({
          name: `get_${parent.kind}_storage_folder`,
          description: `Get one storage folder attachment of ${withArticle(parent.kind)} (\`folderId\` is the attachment's id).`,
          path: one,
          tags,
          params: FolderParams,
          response,
          // The spec's agent tools list folders only (no look-up tool).
          tool: false,
          run: (c, params) => folders.get(c, parent, params, String(params.folderId)),
        }),
      );
      ctx.write(
        defineWrite({
          method: 'POST',
          operationId: `attach_${parent.kind}_storage_folder`,
          description: `Attach an existing folder of a storage drive to ${withArticle(parent.kind)} (400 when the folder does not exist). The first folder becomes primary. Contributors only.`,
          path: base,
          tags,
          params: ListParams,
          body: AttachBody,
          status: 201,
          errors: [403, 409],
          response,
          run: (c, { params, body }) => folders.attach(c, parent, params, body),
        }),
      );
      ctx.write(
        defineWrite({
          method: 'PATCH',
          operationId: `set_${parent.kind}_storage_folder_primary`,
          description: `Make a folder the ${parent.kind}'s primary folder (\`{"primary": true}\`); the previous primary stays attached. Contributors only.`,
          path: one,
          tags,
          params: FolderParams,
          body: PatchBody,
          status: 200,
          errors: [403],
          response,
          run: (c, { params, body }) => folders.setPrimary(c, parent, params, String(params.folderId), body.primary),
        }),
      );
      ctx.write(
        defineWrite({
          method: 'DELETE',
          operationId: `detach_${parent.kind}_storage_folder`,
          description: `Detach a folder from ${withArticle(parent.kind)}; the folder on the drive stays intact. Contributors only.`,
          path: one,
          tags,
          params: FolderParams,
          status: 204,
          errors: [403],
          run: (c, { params }) => folders.detach(c, parent, params, String(params.folderId)),
        }),
      );
    }
  },
});
