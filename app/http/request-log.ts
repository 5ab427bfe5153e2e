import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';
import { redactUrl } from './redact.ts';

/**
 * Fastify's request log lines, one per request: written when the response is done, with the
 * request id (the logger's bindings), method, URL with secrets redacted, route template, status,
 * duration, and who asked (user, organization and key ids; never the key). Fastify's own lines
 * log the raw URL, secrets included, and twice per request.
 */
export class RequestLogController extends LogController {
  #completed = new WeakSet<FastifyRequest>();

  override incomingRequest() {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply) {
    this.#completed.add(request);
    const line = { ...requestLine(request), status: reply.statusCode, durationMs: Math.round(reply.elapsedTime * 100) / 100 };
    if (error) reply.log.error({ ...line, err: error }, 'request errored');
    else reply.log.info(line, 'request completed');
  }

  /**
   * The line of a request whose client hung up before its response was sent (mid-body, or while
   * the handler ran): the response never finishes, so `requestCompleted` never runs for it.
   */
  requestAborted(request: FastifyRequest) {
    if (this.#completed.has(request)) return;
    request.log.info(requestLine(request), 'request aborted by the client');
  }

  override routeNotFound(request: FastifyRequest) {
    request.log.info(`Route ${request.method}:${redactUrl(request.originalUrl)} not found`);
  }
}

/** What every request line says: method, redacted URL, route template and who asked (never the key). */
function requestLine(request: FastifyRequest) {
  return {
    method: request.method,
    url: redactUrl(request.originalUrl),
    // The pattern the router matched (`/api/v1/projects/:projectId`); absent for unknown routes.
    route: request.routeOptions.url,
    userId: request.actor?.userId,
    organizationId: request.actor?.organizationId,
  };
}
