import type { KernelServices } from '../../core/public.ts';
import { DriveService } from './drives.ts';
import { FolderService } from './folders.ts';
import { ProjectStorage } from './project-storage.ts';
import { SharedFolderService } from './shared-folders.ts';

/**
 * The storage plugin's services, made once per kernel in setup: the project's `storage` field and
 * primary folder (project-storage.ts), drives (drives.ts), folder attachments (folders.ts) and
 * shared folders (shared-folders.ts).
 */
export function storageServices(services: KernelServices) {
  return { projectStorage: new ProjectStorage(services), drives: new DriveService(), folders: new FolderService(), shared: new SharedFolderService() };
}
