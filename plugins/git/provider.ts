/** A repository as a Git provider knows it. */
export interface GitRepository {
  /** The provider's own id (GitLab project id, or `<group>/<name>` for local repositories). */
  id: string;
  name: string;
  /** Clone URL. */
  url: string;
}

export interface CreateRepositoryOptions {
  description?: string;
}

/**
 * The one interface every Git connector implements. Groups are the provider's namespaces
 * (GitLab groups, directories under a local root); repositories live in exactly one group.
 */
export interface GitProvider {
  /** Whether the group exists and is reachable with the integration's credentials. */
  groupExists(groupId: string): Promise<boolean>;
  /** The repository of that exact name in the group, if any (used to make creation idempotent). */
  findRepository(groupId: string, name: string): Promise<GitRepository | null>;
  /** Creates the repository; throws GitProviderError('GROUP_NOT_FOUND') when the group is gone. */
  createRepository(groupId: string, name: string, opts?: CreateRepositoryOptions): Promise<GitRepository>;
}

/**
 * Why a provider call failed:
 * - UNAVAILABLE: the provider answered with an error or could not be reached (a 502 upstream);
 * - TIMEOUT: no answer in time (a 504 upstream);
 * - GROUP_NOT_FOUND: the group does not exist (a 400 for the caller, who named it);
 * - CONFLICT: the name is taken by a repository the provider would not return to us;
 * - MISCONFIGURED: the integration's settings or credentials cannot make a provider;
 * - REJECTED: the provider refused the integration's credentials (401/403): no retry helps.
 */
export type GitProviderFailure = 'UNAVAILABLE' | 'TIMEOUT' | 'GROUP_NOT_FOUND' | 'CONFLICT' | 'MISCONFIGURED' | 'REJECTED';

/** The provider was down, failing or slow: a later attempt may succeed. */
export const isTransient = (err: unknown) => err instanceof GitProviderError && (err.failure === 'UNAVAILABLE' || err.failure === 'TIMEOUT');

export class GitProviderError extends Error {
  readonly failure: GitProviderFailure;
  constructor(failure: GitProviderFailure, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.failure = failure;
  }
}

/** A Git integration's settings (non-secret) as the integrations plugin stores them. */
export interface GitSettings {
  provider?: string;
  baseUrl?: string;
  rootPath?: string;
  /** Per-call timeout in milliseconds (default 10 s for HTTP, 30 s for a local `git init`). */
  timeoutMs?: number;
}

export const GIT_PROVIDERS = ['HTTP', 'LOCAL'] as const;
export type GitProviderKind = (typeof GIT_PROVIDERS)[number];
