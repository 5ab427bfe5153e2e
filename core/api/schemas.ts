/** `schemas` of the kernel's entry point: the building blocks of every plugin's request and response schemas. */
/** Strings: a UUID, a string that is not blank, an ISO-8601 instant, a date or date-time input. */
export { Uuid, NotBlank, Timestamp, DateInput } from '../schemas.ts';
/** `T | null`; a string enum; `{ id }` path parameters. */
export { Nullable, StringEnum, IdParams } from '../schemas.ts';
/** Parses a `DateInput` value (400 naming the field when it is not a date). */
export { parseDateInput } from '../schemas.ts';
/** Validates a value against a schema, with the error response a request body gets. */
export { validateInput } from '../validation.ts';
