import type { EntityManager } from '@mikro-orm/postgresql';
import { lookupOrganizationUsers, type OrganizationUserDirectory, type OrganizationUserDto } from '../../core/entities/dto.ts';
import type { AuthCache } from './auth-cache.ts';

/** Upper bound on an entry's life even if every notification were lost (as the key cache's). */
const MAX_AGE_MS = 60_000;
const MAX_ENTRIES = 10_000;

/**
 * The server's organization users by id (`services.organizationUsers`): a feed page reads only
 * its activity rows, and the `user` of each entry comes from here (joined to every row, the two
 * probes and nine columns were a fifth of the feed's database time).
 *
 * Kept exactly like the key cache, on its listener (app/http/auth-cache.ts): any notification
 * (`u:` a membership's roles or status, `a:` a user's name or email, `k:` a key) and any loss of
 * the listener empties it, and it serves only while the listener is up. A request reaches its
 * handler after the listener's barrier (core/auth/api-keys.ts `authenticate`), so a change
 * committed before the request has emptied it by then. A read that raced a notification is not kept.
 * Notifications are rare (a membership or a user changed), so emptying the whole cache is simpler
 * than an index by user and costs one query of a page's users afterwards.
 */
export class OrganizationUserCache implements OrganizationUserDirectory {
  #entries = new Map<string, { dto: OrganizationUserDto; cachedAt: number }>();
  #generation = -1;
  readonly #listener: AuthCache;

  constructor(listener: AuthCache) {
    this.#listener = listener;
  }

  async get(em: EntityManager, ids: readonly string[]): Promise<Map<string, OrganizationUserDto>> {
    if (!this.#listener.active) return lookupOrganizationUsers(em, ids);
    const generation = this.#listener.generation();
    if (generation !== this.#generation) {
      this.#entries.clear();
      this.#generation = generation;
    }
    const now = Date.now();
    const found = new Map<string, OrganizationUserDto>();
    const missing: string[] = [];
    for (const id of ids) {
      const entry = this.#entries.get(id);
      if (entry && now - entry.cachedAt <= MAX_AGE_MS) found.set(id, entry.dto);
      else missing.push(id);
    }
    if (!missing.length) return found;
    const read = await lookupOrganizationUsers(em, missing);
    // Kept only if no notification arrived while reading (it may name what was just read).
    const keep = this.#listener.active && this.#listener.generation() === generation;
    if (keep && this.#entries.size + read.size > MAX_ENTRIES) this.#entries.clear();
    for (const [id, dto] of read) {
      found.set(id, dto);
      if (keep) this.#entries.set(id, { dto, cachedAt: now });
    }
    return found;
  }
}
