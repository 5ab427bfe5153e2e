import { Type, type TObject, type TSchema } from '@sinclair/typebox';
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Orm } from '../db/orm.ts';
import type { KernelServices } from '../kernel/services.ts';
import type { OperationContext, PagedRead, ReadDefinition, WriteDefinition } from '../kernel/operations.ts';
import { MAX_PAGE_SIZE, pageEnvelope, pageQuerySchema, pageSchema, parsePageRequest } from '../pagination/index.ts';
import type { Actor } from '../auth/api-keys.ts';

/** The response schema of a read as both surfaces serialize it. */
export function readResponseSchema(def: ReadDefinition): TSchema {
  return def.paged ? pageSchema(def.response) : def.response;
}

export function maxPageSize(def: PagedRead): number {
  return Math.min(def.paged.maxSize ?? MAX_PAGE_SIZE, MAX_PAGE_SIZE);
}

export function operationContext(actor: Actor, orm: Orm, services: KernelServices, log: FastifyBaseLogger): OperationContext {
  return { actor, em: orm.em.fork(), services, log };
}

/** Runs a read for either surface: same handler, same context, same result. */
export async function executeRead(def: ReadDefinition, ctx: OperationContext, input: Record<string, unknown>): Promise<unknown> {
  if (!def.paged) return def.run(ctx, input as never);
  const page = parsePageRequest(input as { page?: number; size?: number; sort?: string[] }, def.paged.sort);
  const { items, total } = await def.run(ctx, input as never, page);
  return pageEnvelope(items, total, page);
}

function queryFor(def: ReadDefinition): TObject | undefined {
  if (!def.paged) return def.query;
  return Type.Object({ ...(def.query?.properties ?? {}), ...pageQuerySchema(maxPageSize(def)) });
}

// Fastify warns about schema keys present but undefined; leave them out instead.
const defined = <T extends object>(o: T): T => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;

const security: Record<string, string[]>[] = [{ ApiKey: [] }, { ApiKeyAuthorization: [] }];

/** Declares every operation on a mount (`/api/v1`, or the hidden `/api/beta` alias). */
export function registerOperations(
  app: FastifyInstance,
  opts: { reads: ReadDefinition[]; writes: WriteDefinition[]; orm: Orm; services: KernelServices; hidden: boolean },
) {
  const { orm, services, hidden } = opts;
  for (const def of opts.reads) {
    app.route({
      method: 'GET',
      url: def.path,
      schema: defined({
        operationId: hidden ? undefined : def.name,
        description: def.description,
        tags: def.tags,
        hide: hidden,
        security,
        params: def.params,
        querystring: queryFor(def),
        response: { 200: readResponseSchema(def) },
      }),
      handler: async (request: FastifyRequest) => {
        const input = { ...(request.params as object), ...(request.query as object) };
        return executeRead(def, operationContext(request.actor!, orm, services, request.log), input);
      },
    });
  }
  for (const def of opts.writes) {
    const response: Record<number, TSchema> = {};
    if (def.status !== 204 && def.response) response[def.status] = def.response;
    app.route({
      method: def.method,
      url: def.path,
      schema: defined({
        operationId: hidden ? undefined : def.operationId,
        description: def.description,
        tags: def.tags,
        hide: hidden,
        security,
        params: def.params,
        querystring: def.query,
        body: def.body,
        response,
      }),
      preValidation: def.preValidate
        ? async (request: FastifyRequest) => {
            def.preValidate!(request.body);
          }
        : undefined,
      handler: async (request: FastifyRequest, reply: FastifyReply) => {
        const result = await def.run(operationContext(request.actor!, orm, services, request.log), {
          params: (request.params ?? {}) as never,
          query: (request.query ?? {}) as never,
          body: request.body as never,
        });
        reply.code(def.status);
        return def.status === 204 ? reply.send() : result;
      },
    });
  }
}
