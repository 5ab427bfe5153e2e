import type { FastifyRequest } from 'fastify';
import { OptimisticLockError } from '@mikro-orm/core';
import { HttpError, VersionConflictError } from '../../core/errors.ts';

// Apart from app/http/conditional.ts (the If-Match guard) so that the kernel's error envelope can
// name them: the kernel imports nothing from app/, and conditional.ts imports the operation
// routes, which import the envelope (an import circle).

/** 412: the If-Match entity tag no longer matches the record. */
export class PreconditionFailedError extends HttpError {
  constructor() {
    super(412, 'The record has changed since the entity tag in If-Match was read; reload it and try again');
  }
}

/** A lost update under If-Match is a failed precondition (412), not the 409 it is otherwise. */
export function preconditionFailure(error: unknown, request: FastifyRequest): boolean {
  return request.headers['if-match'] !== undefined && (error instanceof VersionConflictError || error instanceof OptimisticLockError);
}
