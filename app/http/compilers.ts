import type { Ajv, ValidateFunction } from 'ajv';
import type { FastifySchemaCompiler } from 'fastify';
import fastJson from 'fast-json-stringify';
import { lazily } from './lazily.ts';
import { ajvWith, bodyValidators, compileOnce } from '../../core/validation.ts';

let textAjv: Ajv | undefined;
const textValidators = compileOnce((schema) => (textAjv ??= ajvWith({ coerceTypes: 'array' })).compile(schema));
/** fast-json-stringify's serializer of a response schema, compiled once per process (see compileOnce). */
export const compileSerializer = compileOnce((schema) => fastJson(nullableForSerializer(schema) as never));

/**
 * The schema as the serializer reads it: `anyOf: [X, null]` (schemas.Nullable, also what the
 * documents show) becomes X with `nullable: true`. For an `anyOf` the serializer validates
 * every value against each branch to choose one (a UUID pattern test per nullable id per row);
 * `nullable` is one `=== null` check. Only plain X (a type, no combinators) is rewritten.
 */
export function nullableForSerializer(schema: unknown, seen = new WeakMap<object, unknown>()): unknown {
  if (schema === null || typeof schema !== 'object') return schema;
  if (seen.has(schema)) return seen.get(schema);
  if (Array.isArray(schema)) {
    const out: unknown[] = [];
    seen.set(schema, out);
    for (const item of schema) out.push(nullableForSerializer(item, seen));
    return out;
  }
  const s = schema as Record<string, unknown>;
  const branches = s.anyOf;
  if (Array.isArray(branches) && branches.length === 2 && Object.keys(s).every((k) => k === 'anyOf' || k === 'description')) {
    const isNull = (b: unknown) => (b as { type?: unknown })?.type === 'null' && Object.keys(b as object).length === 1;
    const other = branches.find((b) => !isNull(b)) as Record<string, unknown> | undefined;
    const plain = other && branches.some(isNull) && typeof other.type === 'string' && other.type !== 'null'
      && !('anyOf' in other || 'oneOf' in other || 'allOf' in other || 'const' in other || 'nullable' in other);
    if (plain) {
      const out = { ...(nullableForSerializer(other, seen) as object), nullable: true };
      seen.set(schema, out);
      return out;
    }
  }
  const out: Record<string, unknown> = {};
  seen.set(schema, out);
  for (const [k, v] of Object.entries(s)) out[k] = nullableForSerializer(v, seen);
  return out;
}

/**
 * Request validation with two Ajv instances. Query strings and path parameters arrive as text,
 * so they are coerced (and `?sort=a` becomes a one-element array); JSON bodies are typed
 * already, so they are not: `"name": 5` is a 400 naming `name`, not the string "5".
 */
export function validatorCompiler(): FastifySchemaCompiler<unknown> {
  return ({ schema, httpPart }) => lazyValidator(() => (httpPart === 'body' ? bodyValidators : textValidators)(schema as object));
}

/**
 * Compiled on the route's first request, not at start-up: compiling every route's schemas was
 * most of the app's start-up CPU (each test file, each instance), and a process serves few of
 * its ~150 routes in its first seconds. Fastify reads `errors` off the function it was given.
 */
function lazyValidator(compile: () => ValidateFunction): ValidateFunction {
  let fn: ValidateFunction | undefined;
  const validate = ((data: unknown) => {
    fn ??= compile();
    const valid = fn(data);
    validate.errors = fn.errors;
    return valid;
  }) as ValidateFunction;
  return validate;
}

/** Response serializers (fast-json-stringify, as Fastify's default), compiled on first use like validators. */
export function serializerCompiler(): (route: { schema: unknown }) => (data: unknown) => string {
  return ({ schema }) => lazily(() => compileSerializer(schema as object));
}

