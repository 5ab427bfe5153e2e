/**
 * Named errors that plugins throw; only the root error handler turns them into HTTP
 * responses (the spec's envelope, or an empty body for 401/403).
 */
export class HttpError extends Error {
  readonly statusCode: number;
  constructor(statusCode: number, message: string) {
    super(message);
    this.statusCode = statusCode;
  }
}

export interface FieldError {
  field: string;
  message: string;
}

export class ValidationError extends HttpError {
  readonly errors: FieldError[];
  constructor(errors: FieldError[] | string, message = 'Validation failed') {
    const list = typeof errors === 'string' ? [] : errors;
    super(400, typeof errors === 'string' ? errors : message);
    this.errors = list;
  }
}

/** 400 that is not about one field (e.g. an illegal state transition). */
export class BadRequestError extends HttpError {
  constructor(message: string) {
    super(400, message);
  }
}

export class ForbiddenError extends HttpError {
  constructor() {
    super(403, 'Forbidden');
  }
}

export class NotFoundError extends HttpError {
  readonly kind: string;
  readonly id: string;
  constructor(kind: string, id: string) {
    super(404, `${kind} with id ${id} not found`);
    this.kind = kind;
    this.id = id;
  }
}

export class ConflictError extends HttpError {
  constructor(message: string) {
    super(409, message);
  }
}

/** 409 for a stale optimistic-lock `version` (412 instead when the caller sent `If-Match`). */
export class VersionConflictError extends ConflictError {}

/** An operator mistake in a bootstrap file or an admin command: the CLI prints its message as the one-line reason. */
export class BootstrapError extends Error {}
