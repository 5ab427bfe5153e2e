import type { Config } from '../config.ts';
import type { ActivityService } from '../activity/index.ts';
import type { PermissionService } from '../permissions/index.ts';

/** Kernel services every plugin may use. */
export interface KernelServices {
  config: Config;
  permissions: PermissionService;
  activity: ActivityService;
}
