import { STATUS_CODES } from 'node:http';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { DriverException, OptimisticLockError, UniqueConstraintViolationException } from '@mikro-orm/core';
import { HttpError, ValidationError, type FieldError } from '../errors.ts';
import { unauthorized } from './auth.ts';
import { PreconditionFailedError, preconditionFailure } from './conditional.ts';

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
  const path = request.url.split('?')[0];
  return reply.code(statusCode).type('application/json; charset=utf-8').send(envelope(statusCode, message, path, errors));
}

/** An error response: the envelope, except 401 and 403, whose bodies are empty. */
export function sendError(request: FastifyRequest, reply: FastifyReply, statusCode: number, message: string, errors?: FieldError[]) {
  if (statusCode === 401) return unauthorized(reply);
  if (statusCode === 403) return reply.code(statusCode).send();
  return sendEnvelope(request, reply, statusCode, message, errors);
}

interface AjvIssue {
  instancePath: string;
  keyword: string;
  params: Record<string, unknown>;
  message?: string;
}

/** Turns the schema validator's output into `{field, message}` items. */
export function fieldErrors(issues: AjvIssue[], context: string | undefined): FieldError[] {
  const out: FieldError[] = [];
  const unionNoise = new Set<FieldError>();
  for (const issue of issues) {
    const segments = issue.instancePath.split('/').filter(Boolean).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
    if (issue.keyword === 'required') segments.push(String(issue.params.missingProperty));
    if (issue.keyword === 'additionalProperties') segments.push(String(issue.params.additionalProperty));
    // Array query parameters (sort) report an index; the parameter is what the caller named.
    const field = segments.filter((s, i) => !(context === 'querystring' && i > 0 && /^\d+$/.test(s))).join('.') || context || 'body';
    let message = issue.message ?? 'is invalid';
    // `pattern: '\S'` is how schemas say "must not be blank" (see core/schemas.ts).
    if (issue.keyword === 'pattern' && issue.params.pattern === '\\S') message = 'must not be blank';
    if (issue.keyword === 'required') message = 'is required';
    if (issue.keyword === 'additionalProperties') message = 'is not a known field';
    if (issue.keyword === 'format' && issue.params.format === 'uuid') message = 'must be a UUID';
    if (issue.keyword === 'format' && issue.params.format === 'email') message = 'must be an e-mail address';
    if (out.some((e) => e.field === field && e.message === message)) continue;
    const item = { field, message };
    out.push(item);
    // `Nullable(x)` is `anyOf [x, null]`: a bad value also fails the null branch and the union;
    // those two say nothing the x branch's reason does not, so they go when it is there.
    if (issue.keyword === 'anyOf' || (issue.keyword === 'type' && issue.params.type === 'null')) unionNoise.add(item);
  }
  return out.filter((e) => !unionNoise.has(e) || !out.some((o) => o.field === e.field && !unionNoise.has(o)));
}

/** The SQLSTATE of a database error, whether MikroORM wrapped it or the driver threw it. */
function databaseErrorState(error: unknown): string | undefined {
  if (!(error instanceof Error)) return undefined;
  const e = error as Error & { sqlState?: unknown; code?: unknown };
  const state = typeof e.sqlState === 'string' ? e.sqlState : e.code;
  const fromDatabase = error instanceof DriverException || error.constructor?.name === 'DatabaseError';
  return fromDatabase && typeof state === 'string' && /^[0-9A-Z]{5}$/.test(state) ? state : undefined;
}

/**
 * The single error handler: every thrown error becomes the envelope. Client mistakes keep
 * their 4xx; anything unknown is a 500 whose message never reveals internals.
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
  const sqlState = databaseErrorState(error);
  if (error instanceof OptimisticLockError || sqlState === '40001' || sqlState === '40P01') {
    // A lost update, or two transactions that PostgreSQL could not both let through.
    return sendError(request, reply, 409, 'The record was changed by another request; reload it and try again');
  }
  if (error instanceof UniqueConstraintViolationException || sqlState === '23505') {
    return sendError(request, reply, 409, 'A record with the same unique value already exists');
  }
  if (sqlState?.startsWith('22')) {
    // Class 22 (data exception): a value PostgreSQL cannot store, e.g. a NUL character in
    // text or a number out of range. The caller's input, so 400; the database text stays in the log.
    request.log.info({ err: error }, 'request value refused by the database');
    return sendError(request, reply, 400, 'A value in the request cannot be stored (for example it contains a NUL character or is out of range)');
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
