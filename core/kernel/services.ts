import type { Config } from '../config.ts';
import type { ActivityService } from '../activity/index.ts';
import type { PermissionService } from '../permissions/index.ts';
import type { StartupSignal } from './startup-signal.ts';
import type { JobQueue } from '../jobs/index.ts';
import type { SecretBox } from '../secrets.ts';
import type { CounterService } from '../counters/index.ts';

/** Kernel services every plugin may use. */
export interface KernelServices {
  config: Config;
  permissions: PermissionService;
  activity: ActivityService;
  /** Tells when start-up ends, so registries outside the kernel freeze with its own. */
  startup: Pick<StartupSignal, 'ended' | 'onEnd'>;
  /** The durable job queue (pg-boss): define jobs in setup, enqueue inside write transactions. */
  jobs: JobQueue;
  /** Seals and opens stored credentials (AES-256-GCM, LABDATA_SECRET_KEY). */
  secrets: SecretBox;
  /** Exact page totals kept by triggers; plugins register their part of `labdata recount`. */
  counters: CounterService;
}
