import { Type, type SchemaOptions, type TSchema } from '@sinclair/typebox';
import { ValidationError } from './errors.ts';
import { LOWERCASE, DATE_INPUT_PATTERN } from './validation.ts';

/** Shared wire schemas; plugins build theirs from these so the rules read the same everywhere. */
/** An id: any UUID is accepted and read in its canonical lowercase form (spec, "Identifiers"). */
export const Uuid = (options: SchemaOptions = {}) => Type.String({ format: 'uuid', [LOWERCASE]: true, ...options });

/** A string that must contain a non-space character (the error reads "must not be blank"). */
export const NotBlank = (options: SchemaOptions = {}) => Type.String({ pattern: '\\S', ...options });

export const Timestamp = (options: SchemaOptions = {}) => Type.String({ format: 'date-time', ...options });

/** Date input: date-only (`YYYY-MM-DD`) or date-time with offset (spec, "Common conventions"). */
export const DateInput = (options: SchemaOptions = {}) =>
  Type.String({
    pattern: DATE_INPUT_PATTERN,
    description: 'YYYY-MM-DD or an ISO 8601 date-time with offset',
    ...options,
  });

export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

export const IdParams = Type.Object({ id: Uuid() });

export const StringEnum = <T extends readonly string[]>(values: T, options: SchemaOptions = {}) =>
  Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options });

/**
 * Turns a validated DateInput into a Date; an impossible date (2024-02-30) is a 400 naming the
 * field, and so is one outside the years 0001 to 9999 as given or in UTC (ISO 8601 without an
 * expanded year: what PostgreSQL and every client read back).
 */
export function parseDateInput(field: string, value: string | null | undefined): Date | null | undefined {
  if (value === undefined || value === null) return value;
  const date = new Date(value);
  const [y, m, d] = value.slice(0, 10).split('-').map(Number);
  const calendar = new Date(Date.UTC(y, m - 1, d));
  // `new Date` reads T24:00 as the next day's midnight; ISO 8601-1:2019 and PostgreSQL clients do not.
  const [hh = 0, mm = 0, ss = 0] = value.length > 10 ? value.slice(11, 19).split(':').map((n) => Number.parseInt(n, 10)) : [];
  if (Number.isNaN(date.getTime()) || calendar.getUTCMonth() !== m - 1 || calendar.getUTCDate() !== d || hh > 23 || mm > 59 || ss > 59) {
    throw new ValidationError([{ field, message: 'is not a valid date' }]);
  }
  if (y < 1 || date.getUTCFullYear() < 1 || date.getUTCFullYear() > 9999) {
    throw new ValidationError([{ field, message: 'is out of range (years 0001 to 9999, in UTC)' }]);
  }
  return date;
}
