import { Ajv, type Options, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';
import type { TSchema } from '@sinclair/typebox';
import fastJson from 'fast-json-stringify';
import { lazily } from '../lazily.ts';
import { isUuid } from '../text.ts';
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
  return ({ schema, httpPart }) => lazyValidator(() => (httpPart === 'body' ? bodyValidators : textValidators)(schema as object));
}

/**
 * Compiled code per schema text, for the whole process: many routes share a schema (`{id}`
 * path parameters, a page query), and a process that builds the app more than once (the test
 * suite, several files per process) compiles each schema once. A compiled validator or
 * serializer keeps no state between calls.
 */
export function compileOnce<F>(compile: (schema: object) => F): (schema: object) => F {
  const cache = new Map<string, F>();
  return (schema) => {
    const key = JSON.stringify(schema);
    let fn = cache.get(key);
    if (!fn) cache.set(key, (fn = compile(schema)));
    return fn;
  };
}

/**
 * The schema keyword of ids (`Uuid()`): the validated string is replaced by its lowercase form,
 * so an id given in capitals is stored, echoed and compared as the canonical one.
 */
export const LOWERCASE = 'x-lowercase';

/** Ajv with the formats and the `x-lowercase` keyword (the MCP tools' validator uses it too). */
export function ajvWith(options: Options): Ajv {
  const ajv = new Ajv({ ...common, ...options });
  addFormats(ajv);
  // ajv-formats' uuid also takes `urn:uuid:…`, which no id column stores: ids are the bare form.
  ajv.addFormat('uuid', isUuid);
  ajv.addKeyword({
    keyword: LOWERCASE,
    schemaType: 'boolean',
    modifying: true,
    errors: false,
    validate: (on: boolean, data: unknown, _schema: unknown, at?: { parentData: Record<string | number, unknown>; parentDataProperty: string | number }) => {
      // Only a UUID: in a union with another string branch, other text stays as sent.
      if (on && isUuid(data) && at?.parentData) at.parentData[at.parentDataProperty] = data.toLowerCase();
      return true;
    },
  });
  return ajv;
}

let bodyAjv: Ajv | undefined;
let textAjv: Ajv | undefined;
const bodyValidators = compileOnce((schema) => (bodyAjv ??= ajvWith({ coerceTypes: false })).compile(schema));
const textValidators = compileOnce((schema) => (textAjv ??= ajvWith({ coerceTypes: 'array' })).compile(schema));
/** fast-json-stringify's serializer of a response schema, compiled once per process (see compileOnce). */
export const compileSerializer = compileOnce((schema) => fastJson(schema as never));

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

/**
 * Checks a value exactly as a JSON request body is checked (no coercion, defaults filled in)
 * and returns the failures as the envelope's `{field, message}` items: for input that does not
 * arrive over HTTP, such as an item of a plugin's bootstrap-file section.
 */
export function validateInput(schema: TSchema, value: unknown): FieldError[] {
  const validate = bodyValidators(schema);
  return validate(value) ? [] : fieldErrors(validate.errors ?? [], 'body');
}
