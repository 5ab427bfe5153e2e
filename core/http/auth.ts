import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Orm } from '../db/orm.ts';
import { authenticate, type Actor } from '../auth/api-keys.ts';
import type { AuthCache } from '../auth/auth-cache.ts';

declare module 'fastify' {
  interface FastifyRequest {
    actor?: Actor;
  }
}

/** The key a request presents: `X-API-KEY: <key>` or `Authorization: ApiKey <key>`. */
export function presentedCredential(request: FastifyRequest): { apiKey?: string; bearer: boolean } {
  const header = request.headers.authorization;
  const bearer = typeof header === 'string' && /^bearer\b/i.test(header.trim());
  const xApiKey = request.headers['x-api-key'];
  if (typeof xApiKey === 'string' && xApiKey.trim()) return { apiKey: xApiKey.trim(), bearer };
  const m = typeof header === 'string' ? /^apikey\s+(\S+)\s*$/i.exec(header.trim()) : null;
  return { apiKey: m?.[1], bearer };
}

/**
 * onRequest hook of the public mounts, /mcp and /docs: a valid API key or 401 with an empty
 * body. Bearer tokens belong to the internal mount and are refused here.
 */
export function apiKeyAuth(orm: Orm, cache?: AuthCache) {
  return async function authHook(request: FastifyRequest, reply: FastifyReply) {
    const { apiKey, bearer } = presentedCredential(request);
    if (bearer || !apiKey) return reply.code(401).send();
    const actor = await authenticate(orm.em, apiKey, cache);
    if (!actor) return reply.code(401).send();
    request.actor = actor;
    // Every later log line of this request names the key id (never the secret).
    request.log = request.log.child({ keyId: actor.keyId });
    reply.log = request.log;
  };
}

/** The internal mount refuses API keys; its own (bearer) authentication does not exist yet. */
export async function internalMountGuard(_request: FastifyRequest, reply: FastifyReply) {
  return reply.code(401).send();
}
