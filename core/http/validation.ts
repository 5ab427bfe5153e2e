import { Ajv, type Options, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';
import type { TSchema } from '@sinclair/typebox';
import fastJson from 'fast-json-stringify';
import { lazily } from '../lazily.ts';
import type { FieldError } from '../errors.ts';
import { fieldErrors } from './envelope.ts';

// ajv-formats is CommonJS; its default export arrives wrapped under ESM.
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ?? addFormatsModule) as unknown as (ajv: Ajv) => void;

const common: Options = { allErrors: true, removeAdditional: true, useDefaults: true, strict: false };

/**
 * Request validation with two Ajv instances. Query strings and path parameters arrive as text,
 * so they are coerced (and `?sort=a` becomes a one-element array); JSON bodies are typed
 * already, so they are not: `"name": 5` is a 400 naming `name`, not the string "5".
 */
export function validatorCompiler(): FastifySchemaCompiler<unknown> {
  const body = new Ajv({ ...common, coerceTypes: false });
  const text = new Ajv({ ...common, coerceTypes: 'array' });
  addFormats(body);
  addFormats(text);
  return ({ schema, httpPart }) => lazyValidator(() => (httpPart === 'body' ? body : text).compile(schema as object));
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
  return ({ schema }) => lazily(() => fastJson(schema as never));
}

let inputAjv: Ajv | undefined;
const compiled = new WeakMap<TSchema, ValidateFunction>();

/**
 * Checks a value exactly as a JSON request body is checked (no coercion, defaults filled in)
 * and returns the failures as the envelope's `{field, message}` items: for input that does not
 * arrive over HTTP, such as an item of a plugin's bootstrap-file section.
 */
export function validateInput(schema: TSchema, value: unknown): FieldError[] {
  if (!inputAjv) addFormats((inputAjv = new Ajv({ ...common, coerceTypes: false })));
  let validate = compiled.get(schema);
  if (!validate) compiled.set(schema, (validate = inputAjv.compile(schema)));
  return validate(value) ? [] : fieldErrors(validate.errors ?? [], 'body');
}
