import { STATUS_CODES } from 'node:http';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { HttpError, ValidationError, type FieldError } from '../../core/errors.ts';
import { databaseFailure } from './database-failure.ts';
import { unauthorized } from './auth.ts';
import { PreconditionFailedError, preconditionFailure } from './precondition.ts';
import { callerPath } from './beta-alias.ts';
import { fieldErrors, type AjvIssue } from '../../core/validation.ts';

/** The spec's error envelope. 401 and 403 never carry one (empty body). */
export interface ErrorEnvelope {
  timestamp: string;
  statusCode: number;
  error: string;
  message: string;
  path: string;
  details?: string;
  errors?: FieldError[];
}

export function envelope(statusCode: number, message: string, path: string, errors?: FieldError[]): ErrorEnvelope {
  const body: ErrorEnvelope = {
    timestamp: new Date().toISOString(),
    statusCode,
    error: STATUS_CODES[statusCode] ?? 'Error',
    message,
    path,
  };
  if (errors) {
    body.details = errors.map((e) => `${e.field}: ${e.message}`).join('; ');
    body.errors = errors;
  }
  return body;
}

/** The envelope, whatever the status (see sendError for the usual rule). */
export function sendEnvelope(request: FastifyRequest, reply: FastifyReply, statusCode: number, message: string, errors?: FieldError[]) {
  const path = callerPath(request);
  return reply.code(statusCode).type('application/json; charset=utf-8').send(envelope(statusCode, message, path, errors));
}

/** An error response: the envelope, except 401 and 403, whose bodies are empty. */
export function sendError(request: FastifyRequest, reply: FastifyReply, statusCode: number, message: string, errors?: FieldError[]) {
  if (statusCode === 401) return unauthorized(reply);
  if (statusCode === 403) return reply.code(statusCode).send();
  return sendEnvelope(request, reply, statusCode, message, errors);
}

/** 404 for a route that does not exist (after the mount's key check, where it has one). */
export function routeNotFound(request: FastifyRequest, reply: FastifyReply) {
  return sendError(request, reply, 404, `Route ${request.method} ${callerPath(request)} not found`);
}

/**
 * The single error handler: every thrown error becomes the envelope. Client mistakes keep
 * their 4xx; database errors get their meaning (app/http/database-failure.ts), a lost database a 503 with
 * `Retry-After`; anything unknown is a 500 whose message never reveals internals.
 */
export function handleError(error: FastifyError & { validation?: AjvIssue[]; validationContext?: string }, request: FastifyRequest, reply: FastifyReply) {
  if (error.validation) {
    return sendError(request, reply, 400, 'Validation failed', fieldErrors(error.validation, error.validationContext));
  }
  if (error instanceof ValidationError && error.errors.length) {
    return sendError(request, reply, 400, error.message, error.errors);
  }
  if (preconditionFailure(error, request)) return sendError(request, reply, 412, new PreconditionFailedError().message);
  if (error instanceof HttpError) return sendError(request, reply, error.statusCode, error.message);
  // The client hung up mid-body (Node's "aborted", code ECONNRESET like a lost database): its mistake.
  if (clientHungUp(error, request)) return sendError(request, reply, 400, 'The request body ended before its Content-Length');
  const failure = databaseFailure(error);
  if (failure) {
    // The database's own text stays in the log: it may name tables, columns and values.
    if (failure.status === 503) request.log.warn({ err: error }, 'database unavailable');
    else request.log.info({ err: error }, 'request refused by the database');
    if (failure.retryAfter) reply.header('retry-after', String(failure.retryAfter));
    return sendError(request, reply, failure.status, failure.message);
  }
  const status = error.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    // Fastify's own client errors (malformed JSON, wrong media type, body too large).
    const message = error.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || error instanceof SyntaxError ? 'Malformed JSON request body' : error.message;
    return sendError(request, reply, status, message);
  }
  request.log.error({ err: error }, 'request failed');
  return sendError(request, reply, 500, 'Internal server error');
}

/**
 * Whether `error` is the request stream's own: the client closed the connection before the end of
 * the body. A handler's error (a lost database) after such a hang-up is still the handler's.
 */
export function clientHungUp(error: unknown, request: FastifyRequest): boolean {
  return request.raw.readableAborted && error === request.raw.errored;
}
