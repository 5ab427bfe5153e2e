import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { Orm } from '../../core/db/orm.ts';
import { authenticate, type Actor } from '../../core/auth/api-keys.ts';
import type { AuthCache } from './auth-cache.ts';

declare module 'fastify' {
  interface FastifyRequest {
    actor?: Actor;
  }
}

/**
 * A per-key request quota that apiKeyAuth counts against once the key is known; the composition
 * layer supplies it (app/http/rate-limit.ts's RateLimiter), so the kernel names no implementation.
 */
export interface KeyLimiter {
  /** Counts one request of `key` (setting any limit headers on `reply`) and throws past the quota. */
  take(key: string, reply: FastifyReply): void;
}

/**
 * The key a request presents: `X-API-KEY: <key>` or `Authorization: ApiKey <key>`. Both at once
 * must name the same key, and neither may be repeated: otherwise none is taken (401), so a
 * revoked or foreign key in one header is never passed over because another holds a valid key.
 */
export function presentedCredential(request: FastifyRequest): { apiKey?: string; bearer: boolean } {
  // Node keeps only the first of repeated Authorization headers: a second one (another key, a
  // bearer token) would pass unseen, so repeated ones present no key at all. (headersDistinct
  // copies every header: only looked at when there is an Authorization header.)
  const sent = request.headers.authorization === undefined ? [] : (request.raw.headersDistinct.authorization ?? []);
  if (sent.length > 1) return { bearer: sent.some((value) => /^\s*bearer\b/i.test(value)) };
  const header = typeof request.headers.authorization === 'string' ? request.headers.authorization.trim() : undefined;
  const bearer = header !== undefined && /^bearer\b/i.test(header);
  const inAuthorization = header !== undefined && /^apikey\b/i.test(header) ? (/^apikey\s+(\S+)$/i.exec(header)?.[1] ?? '') : undefined;
  const xApiKey = typeof request.headers['x-api-key'] === 'string' ? request.headers['x-api-key'].trim() : undefined;
  if (xApiKey && inAuthorization !== undefined && xApiKey !== inAuthorization) return { bearer };
  return { apiKey: xApiKey || inAuthorization || undefined, bearer };
}

/** The challenge of the public mounts (RFC 9110, 11.6.1): the scheme and the header that carries the key. */
export const API_KEY_CHALLENGE = 'ApiKey realm="labdata", header="X-API-KEY"';
// The internal mount takes bearer tokens only.
const INTERNAL_CHALLENGE = 'Bearer realm="labdata-internal"';

/** 401 with an empty body (spec, "Authentication" 7) and the challenge every 401 must carry. */
export function unauthorized(reply: FastifyReply, challenge = API_KEY_CHALLENGE) {
  return reply.code(401).header('www-authenticate', challenge).send();
}

/**
 * onRequest hook of the public mounts, /mcp and /docs: a valid API key or 401 with an empty
 * body. Bearer tokens belong to the internal mount and are refused here.
 */
export function apiKeyAuth(orm: Orm, cache?: AuthCache, limiter?: KeyLimiter) {
  return async function authHook(request: FastifyRequest, reply: FastifyReply) {
    const { apiKey, bearer } = presentedCredential(request);
    if (bearer || !apiKey) return unauthorized(reply);
    const actor = await authenticate(orm.em, apiKey, cache);
    if (!actor) return unauthorized(reply);
    request.actor = actor;
    // Every later log line of this request names the key id (never the secret). The request's
    // logger is its own child already (fastify's, with the request id): bound in place, not a
    // child of a child. Without a logger (tests) fastify's stand-in has no bindings to set.
    (request.log as Partial<Pick<Logger, 'setBindings'>>).setBindings?.({ keyId: actor.keyId });
    // Counted once the key is known, in memory (no extra query); throws 429 past the quota.
    limiter?.take(actor.keyId, reply);
  };
}

/** The internal mount refuses API keys; its own (bearer) authentication does not exist yet. */
export async function internalMountGuard(_request: FastifyRequest, reply: FastifyReply) {
  return unauthorized(reply, INTERNAL_CHALLENGE);
}
