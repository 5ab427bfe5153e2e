import { Type, type TObject, type TSchema } from '@sinclair/typebox';
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Orm } from '../../core/db/orm.ts';
import type { KernelServices } from '../../core/kernel/services.ts';
import { StatusResult, type OperationContext, type PagedRead, type ReadDefinition, type WriteDefinition } from '../../core/kernel/operations.ts';
import { MAX_PAGE_SIZE } from '../../core/pagination/index.ts';
import { pageEnvelope, pageQuerySchema, pageSchema, parsePageRequest } from './pages.ts';
import type { Actor } from '../../core/auth/api-keys.ts';
import { ValidationError, type FieldError } from '../../core/errors.ts';
import { idempotency, isCreate } from './idempotency.ts';
import { SECURITY } from './openapi.ts';
import { requirePrecondition } from '../../core/db/transaction.ts';
import type { EntityManager } from '../../core/db/orm.ts';
import type { ReadReplicas } from '../db/replicas.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** A condition the write must still meet inside its transaction (`If-Match`, set by a preHandler). */
    writePrecondition?: (em: EntityManager) => Promise<void>;
  }
}

/** The response schema of a read as both surfaces serialize it. */
export function readResponseSchema(def: ReadDefinition): TSchema {
  return def.paged ? pageSchema(def.response) : def.response;
}

export function maxPageSize(def: PagedRead): number {
  return Math.min(def.paged.maxSize ?? MAX_PAGE_SIZE, MAX_PAGE_SIZE);
}

export function operationContext(actor: Actor, orm: Orm, services: KernelServices, log: FastifyBaseLogger, signal?: () => AbortSignal): OperationContext {
  const ctx: OperationContext = { actor, em: orm.em.fork(), services, log };
  // Made on first use: most reads never wait, and a hot read should not pay for a signal.
  if (signal) Object.defineProperty(ctx, 'signal', { get: signal, enumerable: true });
  return ctx;
}

/**
 * Aborted when the client goes away before its answer is sent, or when the server starts to
 * close (`closing`): a read that waits (a long poll) ends then instead of holding shutdown.
 */
function requestSignal(reply: FastifyReply, closing: AbortSignal | undefined): () => AbortSignal {
  let signal: AbortSignal | undefined;
  return () => {
    if (signal) return signal;
    const gone = new AbortController();
    const check = () => {
      if (!reply.raw.writableFinished) gone.abort();
    };
    if (reply.raw.destroyed) check();
    else reply.raw.once('close', check);
    return (signal = closing ? AbortSignal.any([gone.signal, closing]) : gone.signal);
  };
}

/**
 * Text PostgreSQL cannot store as given is refused here as a validation failure: U+0000 (it
 * refuses such a parameter outright, a protocol error) and a lone UTF-16 surrogate (`"\udfff"`
 * in JSON; the driver's UTF-8 would silently store U+FFFD instead, so the answer and the
 * stored record would differ).
 */
export function rejectUnstorableText(value: unknown, part: 'body' | 'parameters'): void {
  const errors: FieldError[] = [];
  const walk = (v: unknown, path: string) => {
    if (typeof v === 'string') {
      if (v.includes('\u0000')) errors.push({ field: path || 'body', message: 'must not contain NUL characters' });
      if (/\p{Cs}/u.test(v)) errors.push({ field: path || 'body', message: 'must be valid Unicode (no lone surrogates)' });
    } else if (Array.isArray(v)) {
      // As the schema validator names them: a body's items by index (`fields.0.options.1`), a
      // repeated parameter's by the parameter (`sort`).
      v.forEach((item, i) => walk(item, part === 'parameters' ? path : path ? `${path}.${i}` : String(i)));
    } else if (v !== null && typeof v === 'object') {
      for (const [k, item] of Object.entries(v)) walk(item, path ? `${path}.${k}` : k);
    }
  };
  walk(value, '');
  if (errors.length) throw new ValidationError(errors.filter((e, i) => errors.findIndex((x) => x.field === e.field) === i));
}

/** Runs a read for either surface: same handler, same context, same result. */
export async function executeRead(def: ReadDefinition, ctx: OperationContext, input: Record<string, unknown>): Promise<unknown> {
  rejectUnstorableText(input, 'parameters');
  if (!def.paged) return def.run(ctx, input as never);
  const page = parsePageRequest(input as { page?: number; size?: number; sort?: string[] }, def.paged.sort);
  const { items, total } = await def.run(ctx, input as never, page);
  return pageEnvelope(items, total, page);
}

function queryFor(def: ReadDefinition): TObject | undefined {
  if (!def.paged) return def.query;
  return Type.Object({ ...(def.query?.properties ?? {}), ...pageQuerySchema(maxPageSize(def), def.paged.sort) });
}

/**
 * `page` and `size` are decimal digits. The validator's coercion would otherwise read `0x10`,
 * `1e2`, ` ` or `1.0` as numbers (JavaScript's `Number`), answering a page nobody asked for.
 * A `size` above the list's maximum is capped to it (spec, "Limits": "large pages may be capped
 * at 200"); the page envelope's `size` says what was served.
 */
function pageParameters(maxSize: number) {
  return async function decimalPageParameters(request: FastifyRequest): Promise<void> {
    const query = request.query as Record<string, unknown>;
    const errors: FieldError[] = [];
    for (const field of ['page', 'size']) {
      const value = query[field];
      if (value === undefined) continue;
      if (Array.isArray(value)) errors.push({ field, message: 'must be given once' });
      else if (!(typeof value === 'string' && /^-?\d+$/.test(value))) errors.push({ field, message: 'must be an integer' });
      else if (field === 'page' && value.replace(/^-?0*/, '').length > 15) errors.push({ field, message: 'is too large' });
    }
    if (errors.length) throw new ValidationError(errors);
    if (typeof query.size === 'string' && !query.size.startsWith('-') && Number(query.size) > maxSize) query.size = String(maxSize);
  };
}

// Fastify warns about schema keys present but undefined; leave them out instead.
const defined = <T extends object>(o: T): T => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;


/** Declares every operation on the `/api/v1` mount (`/api/beta` is rewritten to it, app/http/beta-alias.ts). */
export function registerOperations(
  app: FastifyInstance,
  opts: { reads: ReadDefinition[]; writes: WriteDefinition[]; orm: Orm; services: KernelServices; replicas?: ReadReplicas; closing?: AbortSignal },
) {
  const { orm, services, replicas } = opts;
  const idempotent = idempotency(orm, services.secrets);
  for (const def of opts.reads) {
    app.route({
      method: 'GET',
      url: def.path,
      schema: defined({
        operationId: def.name,
        description: def.description,
        tags: def.tags,
        security: SECURITY,
        params: def.params,
        querystring: queryFor(def),
        response: { 200: readResponseSchema(def) },
      }),
      ...(def.paged ? { preValidation: pageParameters(maxPageSize(def)) } : {}),
      handler: async (request: FastifyRequest, reply: FastifyReply) => {
        const input = { ...(request.params as object), ...(request.query as object) };
        const read = () => executeRead(def, operationContext(request.actor!, orm, services, request.log, requestSignal(reply, opts.closing)), input);
        return replicas ? replicas.read(request.actor!.keyId, read) : read();
      },
    });
  }
  for (const def of opts.writes) {
    const response: Record<number, TSchema> = {};
    if (def.status !== 204 && def.response) response[def.status] = def.response;
    if (def.alternativeStatus && def.response) response[def.alternativeStatus] = def.response;
    // OpenAPI requires at least one response per operation; a null schema documents "no body".
    if (def.status === 204) response[204] = Type.Null({ description: 'No content' });
    // Creates honour `Idempotency-Key` (app/http/idempotency.ts): claimed or replayed before validation.
    const create = isCreate(def);
    app.route({
      method: def.method,
      url: def.path,
      schema: defined({
        operationId: def.operationId,
        description: def.description,
        tags: def.tags,
        security: SECURITY,
        params: def.params,
        querystring: def.query,
        body: def.body,
        response,
        callbacks: def.callbacks,
      }),
      ...(create ? { onSend: idempotent.onSend } : {}),
      preValidation: [...(create ? [idempotent.preValidation(def)] : []), async (request: FastifyRequest) => {
        // A body whose every field is optional may be left out altogether (`POST` with no body).
        if (request.body === undefined && def.body && !(def.body as TObject).required?.length) request.body = {};
        rejectUnstorableText(request.params, 'parameters');
        rejectUnstorableText(request.query, 'parameters');
        rejectUnstorableText(request.body, 'body');
        def.preValidate?.(request.body);
      }],
      handler: async (request: FastifyRequest, reply: FastifyReply) => {
        const ctx = operationContext(request.actor!, orm, services, request.log);
        if (request.writePrecondition) requirePrecondition(ctx.em, request.writePrecondition);
        if (create) idempotent.join(request, ctx.em);
        const result = await def.run(ctx, {
          params: (request.params ?? {}) as never,
          query: (request.query ?? {}) as never,
          body: request.body as never,
        });
        // Read-your-writes: this key's next reads wait for a standby that has this write (app/db/replicas.ts).
        if (replicas) await replicas.wrote(request.actor!.keyId);
        if (result instanceof StatusResult) {
          reply.code(result.status);
          return result.body;
        }
        reply.code(def.status);
        return def.status === 204 ? reply.send() : result;
      },
    });
  }
}
