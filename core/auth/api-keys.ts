import crypto from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { ApiKey } from '../entities/index.ts';
import { queryOne, sql } from '../db/sql.ts';

/** The caller of a request or tool call: one user in one organization, as the key says. */
export interface Actor {
  keyId: string;
  userId: string;
  organizationId: string;
  organizationUserId: string;
  roles: string[];
  isAdmin: boolean;
}

export const ADMIN_ROLE = 'ORGANIZATION_ADMIN';
export const KEY_VALIDITY_DAYS = [7, 30, 90, 365] as const;
export const KEY_NAME_MAX = 64;

// key_<keyId>.<secret>: keyId is 20 lowercase base32 characters, the secret 32 random bytes.
const KEY_PATTERN = /^key_([a-z2-7]{20})\.([A-Za-z0-9_-]{43})$/;

function hashSecret(secret: string): Buffer {
  // The secret carries 256 random bits, so a fast hash is enough: nothing to brute-force.
  return crypto.createHash('sha256').update(secret).digest();
}

function newKeyId(): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz234567';
  const bytes = crypto.randomBytes(20);
  return Array.from(bytes, (b) => alphabet[b & 31]).join('');
}

export function parseApiKey(value: string): { keyId: string; secret: string } | undefined {
  const m = KEY_PATTERN.exec(value);
  return m ? { keyId: m[1], secret: m[2] } : undefined;
}

export interface CreatedKey {
  id: string;
  key: string;
}

/** Creates a key row; the secret leaves this function once, in the returned `key`. */
export function createApiKey(
  em: EntityManager,
  input: { userId: string; organizationId: string; organizationUserId: string; name: string; expiresAt: Date },
): CreatedKey {
  const id = newKeyId();
  const secret = crypto.randomBytes(32).toString('base64url');
  em.create(ApiKey, {
    id,
    secretHash: hashSecret(secret),
    name: input.name,
    userId: input.userId,
    organizationId: input.organizationId,
    organizationUserId: input.organizationUserId,
    expiresAt: input.expiresAt,
    revokedAt: null,
    lastUsedAt: null,
  });
  return { id, key: `key_${id}.${secret}` };
}

interface KeyRow {
  id: string;
  secret_hash: Buffer;
  user_id: string;
  organization_id: string;
  organization_user_id: string;
  roles: string[];
  stale: boolean;
}

/**
 * Resolves an API key to its actor with one indexed lookup (primary key plus the organization
 * user it belongs to). Expired, revoked, unknown keys and inactive organization users give
 * undefined. Nothing is cached, so revocation and role changes apply to the next request.
 */
export async function authenticate(em: EntityManager, presented: string): Promise<Actor | undefined> {
  const parsed = parseApiKey(presented);
  if (!parsed) return undefined;
  const row = await queryOne<KeyRow>(em, sql`
    select k.id, k.secret_hash, k.user_id, k.organization_id, k.organization_user_id, ou.roles,
           (k.last_used_at is null or k.last_used_at < now() - interval '1 minute') as stale
      from api_key k
      join organization_user ou on ou.id = k.organization_user_id
     where k.id = ${parsed.keyId}
       and k.revoked_at is null
       and k.expires_at > now()
       and ou.status = 'ACTIVE'`);
  if (!row) return undefined;
  const expected = Buffer.from(row.secret_hash);
  const actual = hashSecret(parsed.secret);
  if (expected.length !== actual.length || !crypto.timingSafeEqual(expected, actual)) return undefined;
  // lastUsedAt is refreshed at most once a minute per key, so a busy key costs no write per request.
  if (row.stale) {
    // Fire and forget: the request does not wait for bookkeeping.
    em.getConnection()
      .execute('update api_key set last_used_at = now() where id = ?', [row.id])
      .catch(() => {});
  }
  return {
    keyId: row.id,
    userId: row.user_id,
    organizationId: row.organization_id,
    organizationUserId: row.organization_user_id,
    roles: row.roles,
    isAdmin: row.roles.includes(ADMIN_ROLE),
  };
}
