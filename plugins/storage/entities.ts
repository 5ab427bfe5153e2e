import { db, defineEntity, p } from '../../core/public.ts';
import { attachedProperties } from '../../lib/records/index.ts';

/** A connected storage drive of an organization (LOCAL directory tree or S3 bucket/prefix). */
export const StorageDrive = defineEntity({
  name: 'StorageDrive',
  tableName: 'storage_drive',
  properties: {
    id: p.uuid().primary(),
    organizationId: p.uuid(),
    name: p.string(),
    kind: p.string(),
    /** Non-secret settings by kind (README, "Drive kinds"). */
    settings: p.json<Record<string, unknown>>(),
    /** Sealed by the kernel's secrets service; never returned. */
    credentials: p.text().nullable(),
    isDefault: p.boolean(),
    createdAt: p.datetime().onCreate(db.creationTime),
    updatedAt: p.datetime().onCreate(db.creationTime).onUpdate(() => new Date()),
  },
});

/** A folder on a drive attached to a project, study or assay (`{folderId}` is this row's id). */
export const StorageFolder = defineEntity({
  name: 'StorageFolder',
  tableName: 'storage_folder',
  properties: {
    ...attachedProperties(),
    driveId: p.uuid(),
    path: p.string(),
    name: p.string(),
    isPrimary: p.boolean(),
    createdById: p.uuid(),
    createdAt: p.datetime().onCreate(db.creationTime),
    updatedAt: p.datetime().onCreate(db.creationTime).onUpdate(() => new Date()),
  },
});

/** A folder shared with the whole organization (provisioned by the bootstrap file). */
export const SharedStorageFolder = defineEntity({
  name: 'SharedStorageFolder',
  tableName: 'shared_storage_folder',
  properties: {
    id: p.uuid().primary(),
    organizationId: p.uuid(),
    driveId: p.uuid(),
    path: p.string(),
    name: p.string(),
    description: p.text().nullable(),
    createdAt: p.datetime().onCreate(db.creationTime),
  },
});
