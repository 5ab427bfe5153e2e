import type { Config } from '../config.ts';
import type { ActivityService } from '../activity/index.ts';
import type { PermissionService } from '../permissions/index.ts';
import type { ParentRegistry } from '../parents.ts';

/** Kernel services every plugin may use. */
export interface KernelServices {
  config: Config;
  permissions: PermissionService;
  activity: ActivityService;
  /** Record kinds other records attach to (projects, studies, assays), registered by their plugins. */
  parents: ParentRegistry;
}
