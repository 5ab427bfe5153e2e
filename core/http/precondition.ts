import type { FastifyRequest } from 'fastify';
import { OptimisticLockError } from '@mikro-orm/core';
import { HttpError, VersionConflictError } from '../errors.ts';

// Apart from conditional.ts so that the error envelope can name them without importing the
// operation routes that conditional.ts wraps (which import the envelope: an import circle).

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
