import crypto from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { query, queryOne, raw, sql, type Sql } from '../db/sql.ts';

/** The caller of a request or tool call: one user in one organization, as the key says. */
export interface Actor {
  keyId: string;
  userId: string;
  organizationId: string;
  organizationUserId: string;
  roles: string[];
  isAdmin: boolean;
  /** The active teams the user belongs to, when authentication read them (core/permissions `actorTeams`). */
  teamIds?: readonly string[];
}

/**
 * What authentication needs to remember about a key between requests: the row `authenticate`
 * read, minus nothing (the secret hash stays, so every request still proves the secret).
 */
export interface CachedKey {
  id: string;
  secretHash: Buffer;
  userId: string;
  organizationId: string;
  organizationUserId: string;
  roles: string[];
  teamIds: string[];
  expiresAt: number;
  /** When lastUsedAt was last written by this process (ms), to write it at most once a minute. */
  lastUsedWrittenAt: number;
  cachedAt: number;
  /** The actor `authenticate` hands out for this entry: one object while the entry lives, so per-caller memos can key on it. */
  actor?: Actor;
}

/**
 * A cache `authenticate` may use (the server's is app/http/auth-cache.ts): `sync` is a barrier
 * after which a change committed before the request has reached the cache; `generation` lets
 * `put` drop an entry read while a change raced it.
 */
export interface KeyCache {
  get(keyId: string): CachedKey | undefined;
  put(entry: CachedKey, generationAtRead: number): void;
  generation(): number;
  sync(): Promise<boolean>;
}

export const ADMIN_ROLE = 'ORGANIZATION_ADMIN';

// key_<keyId>.<secret>: keyId is 20 lowercase base32 characters, the secret 32 random bytes.
const KEY_PATTERN = /^key_([a-z2-7]{20})\.([A-Za-z0-9_-]{43})$/;

/** The stored form of a key's secret (`api_key.secret_hash`). */
export function hashSecret(secret: string): Buffer {
  // The secret carries 256 random bits, so a fast hash is enough: nothing to brute-force.
  return crypto.hash('sha256', secret, 'buffer');
}

export function parseApiKey(value: string): { keyId: string; secret: string } | undefined {
  const m = KEY_PATTERN.exec(value);
  return m ? { keyId: m[1], secret: m[2] } : undefined;
}

interface KeyRow {
  id: string;
  secret_hash: Buffer;
  user_id: string;
  organization_id: string;
  organization_user_id: string;
  roles: string[];
  team_ids: string[];
  expires_ms: string | number;
  stale: boolean;
}

const LAST_USED_EVERY_MS = 60_000;

/** SQL uuid[]: the active teams of the organization user `organizationUserId` (an SQL expression). */
export function activeTeamIds(organizationUserId: Sql): Sql {
  return sql`array(select tm.team_id from team_member tm join team t on t.id = tm.team_id and t.active
                    where tm.organization_user_id = ${organizationUserId} order by 1)`;
}

/** The key's row (with its organization user's roles), if it is usable now. */
async function loadKey(em: EntityManager, keyId: string, cache: KeyCache | undefined): Promise<CachedKey | undefined> {
  const generation = cache?.generation() ?? 0;
  const row = await queryOne<KeyRow>(em, sql`
    select k.id, k.secret_hash, k.user_id, k.organization_id, k.organization_user_id, ou.roles,
           ${activeTeamIds(raw('ou.id'))}::text[] as team_ids,
           extract(epoch from k.expires_at) * 1000 as expires_ms,
           (k.last_used_at is null or k.last_used_at < now() - interval '1 minute') as stale
      from api_key k
      join organization_user ou on ou.id = k.organization_user_id
     where k.id = ${keyId}
       and k.revoked_at is null
       and k.expires_at > now()
       and ou.status = 'ACTIVE'`);
  if (!row) return undefined;
  const now = Date.now();
  const entry: CachedKey = {
    id: row.id,
    secretHash: Buffer.from(row.secret_hash),
    userId: row.user_id,
    organizationId: row.organization_id,
    organizationUserId: row.organization_user_id,
    roles: row.roles,
    teamIds: row.team_ids,
    expiresAt: Number(row.expires_ms),
    // A stale lastUsedAt is written on this request (below); a fresh one was written by someone.
    lastUsedWrittenAt: row.stale ? 0 : now,
    cachedAt: now,
  };
  cache?.put(entry, generation);
  return entry;
}

/**
 * Resolves an API key to its actor. With a cache (the server's), a known key costs no database
 * round trip; revocation, expiry, a deactivated membership, role and team changes still apply to the
 * next request (see KeyCache). Without one (CLI, tests of this function), one indexed lookup.
 * Expired, revoked, unknown keys and inactive organization users give undefined.
 */
export async function authenticate(em: EntityManager, presented: string, cache?: KeyCache): Promise<Actor | undefined> {
  const parsed = parseApiKey(presented);
  if (!parsed) return undefined;
  let entry = cache?.get(parsed.keyId);
  // A cached key is used only after the barrier: a change committed before this request is applied by then.
  if (entry && !((await cache!.sync()) && (entry = cache!.get(parsed.keyId)))) entry = undefined;
  // Read from the database, it passes the barrier too: the server's other caches rely on it (organization users).
  entry ??= (await Promise.all([loadKey(em, parsed.keyId, cache), cache?.sync()]))[0];
  if (!entry) return undefined;
  const actual = hashSecret(parsed.secret);
  if (entry.secretHash.length !== actual.length || !crypto.timingSafeEqual(entry.secretHash, actual)) return undefined;
  // lastUsedAt is refreshed at most once a minute per key, so a busy key costs no write per request.
  const now = Date.now();
  if (now - entry.lastUsedWrittenAt > LAST_USED_EVERY_MS) {
    entry.lastUsedWrittenAt = now;
    // Fire and forget: the request does not wait for bookkeeping.
    query(em, sql`update api_key set last_used_at = now() where id = ${entry.id}`).catch(() => {});
  }
  return (entry.actor ??= Object.freeze({
    keyId: entry.id,
    userId: entry.userId,
    organizationId: entry.organizationId,
    organizationUserId: entry.organizationUserId,
    roles: entry.roles,
    isAdmin: entry.roles.includes(ADMIN_ROLE),
    teamIds: entry.teamIds,
  }));
}
