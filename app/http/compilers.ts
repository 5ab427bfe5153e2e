import type { Ajv, ValidateFunction } from 'ajv';
import type { FastifySchemaCompiler } from 'fastify';
import fastJson from 'fast-json-stringify';
import { lazily } from './lazily.ts';
import { ajvWith, bodyValidators, compileOnce } from '../../core/validation.ts';

let textAjv: Ajv | undefined;
const textValidators = compileOnce((schema) => (textAjv ??= ajvWith({ coerceTypes: 'array' })).compile(schema));
/** fast-json-stringify's serializer of a response schema, compiled once per process (see compileOnce). */
export const compileSerializer = compileOnce((schema) => fastJson(schema as never));

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

