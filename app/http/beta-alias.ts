import type { IncomingMessage } from 'node:http';
import type { FastifyRequest } from 'fastify';

/**
 * The deprecated `/api/beta` mount (spec, "Versioning") is a rewrite to `/api/v1` before
 * routing, not a second set of routes: declaring every route twice doubled the app's start-up
 * (schema compilation) for a mount whose handlers are the same by definition.
 */
const viaBeta = new WeakSet<IncomingMessage>();

/** A path segment decoded as the router decodes it; malformed escapes stay as written. */
export function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/**
 * Fastify's `rewriteUrl`: `/api/beta/...` (any percent-spelling of the two mount segments, as
 * the router would decode them) → `/api/v1/...`, the rest of the URL as the caller wrote it.
 */
export function rewriteBetaUrl(req: IncomingMessage): string {
  const url = req.url ?? '/';
  const match = /^\/([^/?]*)\/([^/?]*)(?=[/?]|$)/.exec(url);
  if (match && safeDecode(match[1]) === 'api' && safeDecode(match[2]) === 'beta') {
    viaBeta.add(req);
    return '/api/v1' + url.slice(match[0].length);
  }
  return url;
}

/** Whether the request came in on the beta mount. */
export const isBeta = (request: FastifyRequest): boolean => viaBeta.has(request.raw);

/** `/api/beta/x/y?q` → `/api/v1/x/y`, keeping the caller's own spelling of the rest of the path. */
export function successorOf(request: FastifyRequest): string {
  const rest = request.url.split('?')[0].replace(/^\/api\/v1/, '');
  // Anything outside visible ASCII, and the delimiters of a Link value, stays percent-encoded.
  return '/api/v1' + rest.replace(/[^\x21-\x7e]|[<>"]/g, (c) => encodeURIComponent(c));
}

/** The path as the caller sent it (what error envelopes and logs name). */
export const callerPath = (request: FastifyRequest): string => request.originalUrl.split('?')[0];
