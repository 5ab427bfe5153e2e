import crypto from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { TObject } from '@sinclair/typebox';
import type { ReadDefinition } from '../../core/kernel/operations.ts';
import type { KernelServices } from '../../core/kernel/services.ts';
import type { EntityManager, Orm } from '../../core/db/orm.ts';
import { PreconditionFailedError } from './precondition.ts';
import { executeRead, operationContext, readResponseSchema } from './operations.ts';

/**
 * Conditional requests (RFC 9110, section 13). A record's entity tag is a hash of the exact bytes
 * its GET answers, so it changes whenever anything in the representation does (not only when
 * the version column moves) and costs no query: the GET already has the bytes.
 */
export function entityTag(representation: string): string {
  return `"${crypto.hash('sha1', representation, 'base64url')}"`;
}


interface Tags {
  any: boolean;
  tags: { weak: boolean; opaque: string }[];
}

function parseTags(header: string): Tags {
  if (header.trim() === '*') return { any: true, tags: [] };
  const tags = [...header.matchAll(/(W\/)?"([\x21\x23-\x7e\x80-\xff]*)"/g)].map((m) => ({ weak: m[1] !== undefined, opaque: m[2] }));
  return { any: false, tags };
}

/** If-None-Match: weak comparison (a `W/` tag matches its strong twin). */
export function noneMatchFails(header: string, etag: string): boolean {
  const { any, tags } = parseTags(header);
  const opaque = etag.slice(1, -1);
  return any || tags.some((t) => t.opaque === opaque);
}

/** If-Match: strong comparison, so a weak tag never matches (RFC 9110, 13.1.1). */
export function ifMatchHolds(header: string, etag: string): boolean {
  const { any, tags } = parseTags(header);
  const opaque = etag.slice(1, -1);
  return any || tags.some((t) => !t.weak && t.opaque === opaque);
}

/**
 * preHandler of a PUT/PATCH/DELETE whose record has no GET (a study relationship): it has no
 * entity tag, so no listed tag can match and only `If-Match: *` lets the write go on (RFC 9110, 13.1.1).
 */
export async function ifMatchWithoutTag(request: FastifyRequest) {
  const header = request.headers['if-match'];
  if (typeof header === 'string' && !parseTags(header).any) throw new PreconditionFailedError();
}

/**
 * onSend hook of a record GET: `ETag` on every 200, and 304 without a body when the caller's
 * If-None-Match already names it.
 */
export async function entityTagOnSend(request: FastifyRequest, reply: FastifyReply, payload: unknown) {
  if (reply.statusCode !== 200 || typeof payload !== 'string') return payload;
  const etag = entityTag(payload);
  reply.header('etag', etag);
  const header = request.headers['if-none-match'];
  if (typeof header === 'string' && noneMatchFails(header, etag)) {
    reply.code(304);
    reply.removeHeader('content-type');
    return null;
  }
  return payload;
}

/**
 * preHandler of a PUT/PATCH/DELETE whose record has a GET (`read`, path parameters `names`): with `If-Match`, reads the
 * record as the caller would and answers 412 when its tag differs; the write's transaction checks
 * it again (`writePrecondition`). A body that takes `version` also gets the version just read.
 */
export function ifMatchGuard(read: ReadDefinition, names: string[], versioned: boolean, deps: { orm: Orm; services: KernelServices }) {
  return async function ifMatch(request: FastifyRequest, reply: FastifyReply) {
    const header = request.headers['if-match'];
    if (typeof header !== 'string') return;
    const params = request.params as Record<string, string>;
    const input = Object.fromEntries(names.map((n) => [n, params[n]]));
    const ctx = operationContext(request.actor!, deps.orm, deps.services, request.log);
    const holds = async (em: EntityManager) => {
      const current = await executeRead(read, { ...ctx, em }, input);
      const representation = reply.serializeInput(current as Record<string, unknown>, readResponseSchema(read) as TObject);
      if (!ifMatchHolds(header, entityTag(representation))) throw new PreconditionFailedError();
      return current;
    };
    const current = await holds(ctx.em);
    // Checked again inside the write's transaction (core/db/transaction.ts): a change committed
    // between this check and the write is a 412 too, with or without a version in the body.
    request.writePrecondition = async (em) => void (await holds(em));
    const body = request.body as Record<string, unknown> | undefined;
    const version = (current as { version?: unknown }).version;
    if (versioned && body && typeof body === 'object' && body.version === undefined && typeof version === 'number') body.version = version;
  };
}
