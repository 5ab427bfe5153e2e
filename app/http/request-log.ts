import { LogController, type FastifyReply, type FastifyRequest } from 'fastify';
import { redactUrl } from '../../core/logging/redact.ts';

/**
 * Fastify's request log lines, one per request: written when the response is done, with the
 * request id (the logger's bindings), method, URL with secrets redacted, route template, status,
 * duration, and who asked (user, organization and key ids; never the key). Fastify's own lines
 * log the raw URL, secrets included, and twice per request.
 */
export class RequestLogController extends LogController {
  override incomingRequest() {}

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply) {
    const actor = request.actor;
    const line = {
      method: request.method,
      url: redactUrl(request.originalUrl),
      // The pattern the router matched (`/api/v1/projects/:projectId`); absent for unknown routes.
      route: request.routeOptions.url,
      status: reply.statusCode,
      durationMs: Math.round(reply.elapsedTime * 100) / 100,
      userId: actor?.userId,
      organizationId: actor?.organizationId,
    };
    if (error) reply.log.error({ ...line, err: error }, 'request errored');
    else reply.log.info(line, 'request completed');
  }

  override routeNotFound(request: FastifyRequest) {
    request.log.info(`Route ${request.method}:${redactUrl(request.originalUrl)} not found`);
  }
}
