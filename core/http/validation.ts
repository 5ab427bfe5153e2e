import { Ajv, type Options } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifySchemaCompiler } from 'fastify';

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
  return ({ schema, httpPart }) => (httpPart === 'body' ? body : text).compile(schema as object);
}
