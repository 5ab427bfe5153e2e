import { VendorClient, VendorError } from '../../lib/integrations/index.ts';
import { GitProviderError, type CreateRepositoryOptions, type GitProvider, type GitRepository } from './provider.ts';

/** The fields of a GitLab-style project this connector reads. */
interface VendorProject {
  id: number | string;
  name: string;
  path: string;
  http_url_to_repo: string;
}

export interface HttpGitProviderOptions {
  baseUrl: string;
  token: string;
  /** Per-call timeout; a slow vendor must not hold a request (or a transaction) for long. */
  timeoutMs?: number;
}

/**
 * A Git hosting service speaking the GitLab-style REST API (v4): groups are namespaces,
 * repositories are "projects". Authenticates with the integration's token in `PRIVATE-TOKEN`.
 */
export class HttpGitProvider implements GitProvider {
  readonly #client: VendorClient;

  constructor(opts: HttpGitProviderOptions) {
    const base = opts.baseUrl.replace(/\/+$/, '');
    this.#client = new VendorClient({ vendor: 'Git provider', baseUrl: `${base}/api/v4/`, headers: { 'private-token': opts.token }, timeoutMs: opts.timeoutMs });
  }

  async groupExists(groupId: string): Promise<boolean> {
    return (await this.#group(groupId)) !== null;
  }

  async findRepository(groupId: string, name: string): Promise<GitRepository | null> {
    const res = await this.#call<VendorProject[]>('GET', `groups/${encodeURIComponent(groupId)}/projects?search=${encodeURIComponent(name)}&per_page=100`, {
      accept: [404],
    });
    if (res.status === 404 || !Array.isArray(res.body)) return null;
    // `search` matches substrings of names and paths: only the exact path is ours.
    const found = res.body.find((p) => p.path === name);
    return found ? toRepository(found) : null;
  }

  async createRepository(groupId: string, name: string, opts: CreateRepositoryOptions = {}): Promise<GitRepository> {
    // The create call takes the group's numeric id; the caller may have named the group by path.
    const group = await this.#group(groupId);
    if (!group) throw new GitProviderError('GROUP_NOT_FOUND', `Git group ${groupId} not found`);
    const res = await this.#call<VendorProject>('POST', 'projects', {
      body: { name, path: name, namespace_id: group.id, description: opts.description },
      accept: [400],
    });
    if (res.status === 400) {
      // GitLab answers 400 "has already been taken" when the path exists (e.g. a concurrent create).
      const existing = await this.findRepository(groupId, name);
      if (existing) return existing;
      throw new GitProviderError('CONFLICT', `The Git provider refused to create repository ${name} in group ${groupId}`);
    }
    return toRepository(res.body);
  }

  async #group(groupId: string): Promise<{ id: number | string } | null> {
    const res = await this.#call<{ id: number | string }>('GET', `groups/${encodeURIComponent(groupId)}`, { accept: [404] });
    return res.status === 404 ? null : res.body;
  }

  /** One vendor call; failures become GitProviderErrors (the messages never carry the token). */
  async #call<T>(method: string, path: string, req: { body?: unknown; accept?: number[] }) {
    try {
      return await this.#client.request<T>(method, path, req);
    } catch (err) {
      if (!(err instanceof VendorError)) throw err;
      if (err.status === null && /timed out/.test(err.message)) throw new GitProviderError('TIMEOUT', 'The Git provider did not answer in time', { cause: err });
      if (err.status === null) throw new GitProviderError('UNAVAILABLE', 'The Git provider could not be reached', { cause: err });
      if (err.status === 401 || err.status === 403) {
        throw new GitProviderError('REJECTED', "The Git provider rejected the integration's credentials", { cause: err });
      }
      throw new GitProviderError('UNAVAILABLE', `The Git provider answered HTTP ${err.status}`, { cause: err });
    }
  }
}

function toRepository(p: VendorProject): GitRepository {
  return { id: String(p.id), name: p.path, url: p.http_url_to_repo };
}
