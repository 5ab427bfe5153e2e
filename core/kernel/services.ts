import type { EntityManager } from '@mikro-orm/postgresql';
import type { FastifyBaseLogger } from 'fastify';
import type { Actor } from '../auth/api-keys.ts';
import type { Config } from '../config.ts';
import type { ActivityService } from '../activity/index.ts';
import type { PermissionService } from '../permissions/index.ts';
import type { JobContext as JobContextOf, JobQueue } from '../jobs/index.ts';
import type { SecretBox } from '../secrets.ts';
import type { CounterService } from '../counters/index.ts';
import type { Startup } from './startup.ts';
import type { OrganizationUserDirectory } from '../entities/dto.ts';

/** Kernel services every plugin may use. */
export interface KernelServices {
  config: Config;
  /** Start-up's end: registries freeze then; libraries freeze theirs with `startup.onEnded`. */
  startup: Startup;
  permissions: PermissionService;
  activity: ActivityService<OperationContext>;
  /** The durable job queue: define jobs in setup, enqueue inside write transactions (run on pg-boss by app/). */
  jobs: JobQueue<KernelServices>;
  /** Seals and opens stored credentials (AES-256-GCM, LABDATA_SECRET_KEY). */
  secrets: SecretBox;
  /** Exact page totals kept by triggers; plugins register their part of `labdata recount`. */
  counters: CounterService;
  /** Organization users by id (a feed's `user`); the server replaces it with a cached one. */
  organizationUsers: OrganizationUserDirectory;
}

/**
 * What every handler receives: the caller and its own EntityManager fork. Here, beside the
 * services it carries, so that the services' own types (activity, jobs) need not import it.
 */
export interface OperationContext {
  actor: Actor;
  em: EntityManager;
  services: KernelServices;
  /** The request's logger (carries the request id and key id). */
  log: FastifyBaseLogger;
  signal?: AbortSignal; // REST reads: aborted when the client goes away or the server stops, so a long wait ends early
}

/** What a job handler receives, with the kernel services. */
export type JobContext = JobContextOf<KernelServices>;
