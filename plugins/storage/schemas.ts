import { schemas, type Static, type TSchema, Type } from '../../core/public.ts';
import { MAX_NAME_LENGTH, MAX_PATH_LENGTH } from './paths.ts';

export const DRIVE_KINDS = ['LOCAL', 'S3'] as const;
export type DriveKind = (typeof DRIVE_KINDS)[number];
export const STORAGE_MODES = ['CREATE_NEW', 'USE_EXISTING'] as const;

const PATH_RULE = 'Folder path relative to the drive root, segments separated by "/" ("" or "/" is the root); no "." or ".." segments';

/** A drive's non-secret settings, by kind (credentials are never part of a response). */
export const DriveSettings = Type.Object({
  rootPath: Type.Optional(Type.String({ description: 'LOCAL: absolute directory on the server' })),
  endpoint: Type.Optional(Type.String({ description: 'S3: endpoint URL' })),
  region: Type.Optional(Type.String({ description: 'S3: region' })),
  bucket: Type.Optional(Type.String({ description: 'S3: bucket' })),
  prefix: Type.Optional(Type.String({ description: 'S3: key prefix the drive lives under ("" for the whole bucket)' })),
  forcePathStyle: Type.Optional(Type.Boolean({ description: 'S3: path-style URLs' })),
  projectRoot: Type.String({ description: 'Folder under which projects get their primary folder when this is the default drive' }),
  timeoutSeconds: Type.Number({ description: 'How long one call to the drive may take' }),
});
export type DriveSettingsShape = Static<typeof DriveSettings>;

export const StorageDriveSchema = Type.Object({
  id: schemas.Uuid(),
  organizationId: schemas.Uuid(),
  name: Type.String(),
  kind: schemas.StringEnum(DRIVE_KINDS),
  isDefault: Type.Boolean({ description: "The organization's default cloud storage (projects created without `storage` get their folder here)" }),
  settings: DriveSettings,
  hasCredentials: Type.Boolean({ description: 'Whether credentials are stored (they are never returned)' }),
  createdAt: schemas.Timestamp(),
  updatedAt: schemas.Timestamp(),
});

/** An attachment as both surfaces return it; `parent` is the kernel's `parentProperties`. */
export function storageFolderSchema(parent: Record<string, TSchema>) {
  return Type.Object({
    id: schemas.Uuid({ description: 'Id of the attachment (not of the folder on the drive)' }),
    organizationId: schemas.Uuid(),
    ...parent,
    driveId: schemas.Uuid(),
    path: Type.String({ description: PATH_RULE }),
    name: Type.String({ description: 'Last segment of the path (the drive root: its directory or bucket name)' }),
    primary: Type.Boolean({ description: "The record's primary folder (exactly one per record that has folders)" }),
    createdById: schemas.Uuid({ description: 'Organization user who attached the folder' }),
    createdAt: schemas.Timestamp(),
    updatedAt: schemas.Timestamp(),
  }, { title: 'StorageFolder' });
}

export const SharedStorageFolderSchema = Type.Object({
  id: schemas.Uuid(),
  organizationId: schemas.Uuid(),
  driveId: schemas.Uuid(),
  path: Type.String({ description: PATH_RULE }),
  name: Type.String(),
  description: schemas.Nullable(Type.String()),
  createdAt: schemas.Timestamp(),
});

const Path = () => Type.String({ maxLength: MAX_PATH_LENGTH, description: PATH_RULE });

export const AttachBody = Type.Object({
  driveId: schemas.Uuid(),
  path: Path(),
});
export type AttachBody = Static<typeof AttachBody>;

export const PatchBody = Type.Object({
  primary: Type.Boolean({ description: 'Only `true`: makes this the primary folder (the previous primary stays attached)' }),
});

/** The `storage` field of project create (spec, Project). */
export const StorageField = Type.Object(
  {
    driveId: schemas.Uuid(),
    mode: schemas.StringEnum(STORAGE_MODES, { description: 'CREATE_NEW: a new folder under `path`; USE_EXISTING: the folder at `path`' }),
    path: Type.Optional(Path()),
    name: Type.Optional(schemas.NotBlank({ maxLength: MAX_NAME_LENGTH, description: 'Only with CREATE_NEW: the new folder\'s name (default: from the project code)' })),
  },
  { description: "The project's primary folder; omitted: a new folder in the organization's default cloud storage. Create only." },
);
export type StorageFieldValue = Static<typeof StorageField>;

/** A bootstrap `storageDrives` item (README, "Bootstrap"); settings may also sit in `settings`. */
export const DriveItem = Type.Object({
  name: schemas.NotBlank({ maxLength: 255 }),
  kind: schemas.StringEnum(DRIVE_KINDS),
  rootPath: Type.Optional(schemas.NotBlank()),
  endpoint: Type.Optional(schemas.NotBlank()),
  region: Type.Optional(schemas.NotBlank()),
  bucket: Type.Optional(schemas.NotBlank()),
  prefix: Type.Optional(Type.String()),
  forcePathStyle: Type.Optional(Type.Boolean()),
  projectRoot: Type.Optional(Type.String()),
  timeoutSeconds: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 600 })),
  credentials: Type.Optional(Type.Object({ accessKeyId: schemas.NotBlank(), secretAccessKey: schemas.NotBlank() })),
  default: Type.Optional(Type.Boolean()),
  sharedFolders: Type.Optional(
    Type.Array(
      Type.Object({
        ref: Type.Optional(schemas.NotBlank()),
        path: Type.String({ maxLength: MAX_PATH_LENGTH }),
        name: Type.Optional(schemas.NotBlank({ maxLength: 255 })),
        description: Type.Optional(Type.String({ maxLength: 10000 })),
      }),
    ),
  ),
});
export type DriveItem = Static<typeof DriveItem>;
