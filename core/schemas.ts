import { Type, type SchemaOptions, type TSchema } from '@sinclair/typebox';

/** Shared wire schemas; plugins build theirs from these so the rules read the same everywhere. */
export const Uuid = (options: SchemaOptions = {}) => Type.String({ format: 'uuid', ...options });

/** A string that must contain a non-space character (the error reads "must not be blank"). */
export const NotBlank = (options: SchemaOptions = {}) => Type.String({ pattern: '\\S', ...options });

export const Timestamp = (options: SchemaOptions = {}) => Type.String({ format: 'date-time', ...options });

/** Date input: date-only (`YYYY-MM-DD`) or date-time with offset (spec, "Common conventions"). */
export const DateInput = (options: SchemaOptions = {}) =>
  Type.String({
    pattern: '^\\d{4}-\\d{2}-\\d{2}(T\\d{2}:\\d{2}(:\\d{2}(\\.\\d+)?)?(Z|[+-]\\d{2}:\\d{2}))?$',
    description: 'YYYY-MM-DD or an ISO 8601 date-time with offset',
    ...options,
  });

export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

export const IdParams = Type.Object({ id: Uuid() });

export const StringEnum = <T extends readonly string[]>(values: T, options: SchemaOptions = {}) =>
  Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options });
