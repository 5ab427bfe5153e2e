import crypto from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';

export const REQUEST_ID_HEADER = 'x-request-id';

// Short and free of anything that could forge a log line or a header (no spaces, quotes, CR/LF).
const SAFE_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Fastify's genReqId: the caller's `X-Request-Id` when it is safe to log and echo, so one id
 * follows a call across systems; otherwise a fresh UUID.
 */
export function requestId(req: IncomingMessage): string {
  const sent = req.headers[REQUEST_ID_HEADER];
  // An API key put there by mistake would be logged and echoed: not taken as an id.
  return typeof sent === 'string' && SAFE_ID.test(sent) && !sent.startsWith('key_') ? sent : crypto.randomUUID();
}

/** First onRequest hook: every answer (401, 404, errors, the MCP transport's own) names the request. */
export async function echoRequestId(request: FastifyRequest, reply: FastifyReply) {
  reply.header(REQUEST_ID_HEADER, request.id);
}
