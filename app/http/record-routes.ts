import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import type { ReadDefinition, WriteDefinition } from '../../core/kernel/operations.ts';
import type { KernelServices } from '../../core/kernel/services.ts';
import type { Orm } from '../../core/db/orm.ts';
import { entityTagOnSend, ifMatchGuard, ifMatchWithoutTag } from './conditional.ts';
import { isBeta } from './beta-alias.ts';
import { isCreate } from './idempotency.ts';

/** The record a path acts on: the longest item GET that is the path itself or one of its prefixes. */
export function recordRead(path: string, reads: ReadDefinition[]): ReadDefinition | undefined {
  return reads
    .filter((r) => !r.paged && (path === r.path || path.startsWith(r.path + '/')))
    .sort((a, b) => b.path.length - a.path.length)[0];
}

/** The `:name` parameters of a route pattern, in order. */
export function paramNames(pattern: string): string[] {
  return [...pattern.matchAll(/:(\w+)/g)].map((m) => m[1]);
}

/** A route pattern with its parameters filled in (each percent-encoded as one segment). */
export function fillPath(pattern: string, params: Record<string, unknown>): string {
  return pattern.replace(/:(\w+)/g, (_, name: string) => encodeURIComponent(String(params[name])));
}

const segments = (path: string) => path.split('/').length;

/**
 * Where a created record can be read: its own GET (`POST /x/:p/tasks` → `/x/:p/tasks/:taskId`,
 * the new id filled in); else the list it was added to; else the record it belongs to (a
 * study's Git repository is part of the study).
 */
function createdRecordUrl(write: WriteDefinition, reads: ReadDefinition[]): { pattern: string; idParam?: string } | undefined {
  const own = reads.find((r) => !r.paged && r.path.startsWith(write.path + '/:') && segments(r.path) === segments(write.path) + 1);
  if (own) return { pattern: own.path, idParam: paramNames(own.path).at(-1) };
  const pattern = reads.find((r) => r.path === write.path)?.path ?? recordRead(write.path, reads)?.path;
  return pattern ? { pattern } : undefined;
}

/** preSerialization hook of a create: `Location` names the new record's URL on the mount it came in on. */
function locationHook(url: { pattern: string; idParam?: string }, prefix: string) {
  return async function location(request: FastifyRequest, reply: FastifyReply, payload: unknown) {
    const id = (payload as { id?: unknown } | null)?.id;
    if (reply.statusCode === 201 && typeof id === 'string') {
      const params: Record<string, unknown> = { ...(request.params as object) };
      if (url.idParam) params[url.idParam] = id;
      reply.header('location', (isBeta(request) ? '/api/beta' : prefix) + fillPath(url.pattern, params));
    }
    return payload;
  };
}

const hooks = (existing: unknown): unknown[] => (existing === undefined ? [] : Array.isArray(existing) ? existing : [existing]);

/**
 * HTTP conventions of the kernel's record operations on one mount, attached as each route is
 * declared (so before `registerOperations` runs): `ETag`/304 on record GETs, `If-Match` on
 * PUT/PATCH/DELETE and POST actions, `Location` on 201 creates.
 */
export function registerRecordConventions(
  api: FastifyInstance,
  opts: { reads: ReadDefinition[]; writes: WriteDefinition[]; orm: Orm; services: KernelServices },
): void {
  api.addHook('onRoute', (route: RouteOptions & { routePath?: string; prefix?: string }) => {
    const path = route.routePath ?? '';
    const prefix = route.prefix ?? '';
    const method = String(route.method);
    if (method === 'GET' && opts.reads.some((r) => r.path === path && !r.paged)) {
      route.onSend = [...hooks(route.onSend), entityTagOnSend] as never;
      return;
    }
    const write = opts.writes.find((w) => w.method === method && w.path === path);
    if (!write) return;
    if (isCreate(write)) {
      const url = createdRecordUrl(write, opts.reads);
      if (url) route.preSerialization = [...hooks(route.preSerialization), locationHook(url, prefix)] as never;
    }
    // Every change of a record takes If-Match: PUT, PATCH, DELETE and the POST actions on it
    // (status, archive, members added); a POST that creates has no tag to compare yet.
    if (method === 'PUT' || method === 'PATCH' || method === 'DELETE' || (method === 'POST' && !isCreate(write))) {
      const read = recordRead(path, opts.reads);
      const versioned = Boolean((write.body as { properties?: Record<string, unknown> } | undefined)?.properties?.version);
      const guard = read ? ifMatchGuard(read, paramNames(read.path), versioned, opts) : ifMatchWithoutTag;
      route.preHandler = [...hooks(route.preHandler), guard] as never;
    }
  });
}
