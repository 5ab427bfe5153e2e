/**
 * `errors` of the kernel's entry point: what an operation throws; the server turns each into the
 * spec's error response (app/http/envelope.ts).
 */
/** Any HTTP error with a status and a message; the others extend it. */
export { HttpError } from '../errors.ts';
/** 400 with the fields that failed (`errors[]` of the envelope), and one such field. */
export { ValidationError, type FieldError } from '../errors.ts';
/** 400 without fields, 403, 404 naming the record, 409, and 409 for a stale `If-Match`. */
export { BadRequestError, ForbiddenError, NotFoundError, ConflictError, VersionConflictError } from '../errors.ts';
/** A bootstrap file section that cannot be applied (`labdata bootstrap` names it and stops). */
export { BootstrapError } from '../errors.ts';
