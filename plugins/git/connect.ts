import { HttpGitProvider } from './http-provider.ts';
import { LocalGitProvider } from './local-provider.ts';
import { GIT_PROVIDERS, GitProviderError, type GitProvider, type GitSettings } from './provider.ts';

/** What the git plugin needs of a GIT integration (settings are non-secret, credentials opened). */
export interface GitIntegration {
  id: string;
  settings: GitSettings;
  credentials: { token?: unknown } | null;
}

/**
 * The connector for an integration: `settings.provider` `HTTP` (a GitLab-style service at
 * `settings.baseUrl`, token from `credentials.token`) or `LOCAL` (bare repositories under
 * `settings.rootPath`).
 */
export function connect(integration: GitIntegration): GitProvider {
  const { provider, baseUrl, rootPath } = integration.settings ?? {};
  const timeoutMs = typeof integration.settings?.timeoutMs === 'number' && integration.settings.timeoutMs > 0 ? integration.settings.timeoutMs : undefined;
  const unusable = (why: string) => new GitProviderError('MISCONFIGURED', `Git integration ${integration.id} is not usable: ${why}`);
  if (provider === 'LOCAL') {
    if (typeof rootPath !== 'string' || !rootPath) throw unusable('settings.rootPath is missing');
    return new LocalGitProvider({ rootPath, timeoutMs });
  }
  if (provider === 'HTTP') {
    if (typeof baseUrl !== 'string' || !/^https?:\/\//.test(baseUrl)) throw unusable('settings.baseUrl is missing or not an http(s) URL');
    const token = integration.credentials?.token;
    if (typeof token !== 'string' || !token) throw unusable('it has no token');
    return new HttpGitProvider({ baseUrl, token, timeoutMs });
  }
  throw unusable(`settings.provider must be one of ${GIT_PROVIDERS.join(', ')}`);
}
