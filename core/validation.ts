import { Ajv, type Options } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { TSchema } from '@sinclair/typebox';
import { isUuid } from './text.ts';
import type { FieldError } from './errors.ts';

// ajv-formats is CommonJS; its default export arrives wrapped under ESM.
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ?? addFormatsModule) as unknown as (ajv: Ajv) => void;

const common: Options = { allErrors: true, removeAdditional: true, useDefaults: true, strict: false };

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
/** The validators of JSON bodies: typed already, so not coerced (see app/http/compilers.ts). */
export const bodyValidators = compileOnce((schema) => (bodyAjv ??= ajvWith({ coerceTypes: false })).compile(schema));
/**
 * Checks a value exactly as a JSON request body is checked (no coercion, defaults filled in)
 * and returns the failures as the envelope's `{field, message}` items: for input that does not
 * arrive over HTTP, such as an item of a plugin's bootstrap-file section.
 */
export function validateInput(schema: TSchema, value: unknown): FieldError[] {
  const validate = bodyValidators(schema);
  return validate(value) ? [] : fieldErrors(validate.errors ?? [], 'body');
}

export interface AjvIssue {
  instancePath: string;
  keyword: string;
  params: Record<string, unknown>;
  message?: string;
}

/** The pattern of date inputs (core/schemas.ts `DateInput`): a failure is said in words, not as a regex. */
export const DATE_INPUT_PATTERN = '^\\d{4}-\\d{2}-\\d{2}(T\\d{2}:\\d{2}(:\\d{2}(\\.\\d+)?)?(Z|[+-]\\d{2}:\\d{2}))?$';

/** Turns the schema validator's output into `{field, message}` items. */
export function fieldErrors(issues: AjvIssue[], context: string | undefined): FieldError[] {
  const out: FieldError[] = [];
  const unionNoise = new Set<FieldError>();
  for (const issue of issues) {
    const segments = issue.instancePath.split('/').filter(Boolean).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
    if (issue.keyword === 'required') segments.push(String(issue.params.missingProperty));
    if (issue.keyword === 'additionalProperties') segments.push(String(issue.params.additionalProperty));
    // Array query parameters (sort) report an index; the parameter is what the caller named.
    const field = segments.filter((s, i) => !(context === 'querystring' && i > 0 && /^\d+$/.test(s))).join('.') || context || 'body';
    let message = issue.message ?? 'is invalid';
    // `pattern: '\S'` is how schemas say "must not be blank" (see core/schemas.ts).
    if (issue.keyword === 'pattern' && issue.params.pattern === '\\S') message = 'must not be blank';
    if (issue.keyword === 'pattern' && issue.params.pattern === DATE_INPUT_PATTERN) message = 'must be a date (YYYY-MM-DD) or an ISO 8601 date-time with offset (YYYY-MM-DDThh:mm:ssZ)';
    if (issue.keyword === 'required') message = 'is required';
    if (issue.keyword === 'additionalProperties') message = 'is not a known field';
    if (issue.keyword === 'format' && issue.params.format === 'uuid') message = 'must be a UUID';
    if (issue.keyword === 'format' && issue.params.format === 'email') message = 'must be an e-mail address';
    if (issue.keyword === 'enum' && Array.isArray(issue.params.allowedValues)) message = `must be one of ${issue.params.allowedValues.join(', ')}`;
    if (out.some((e) => e.field === field && e.message === message)) continue;
    const item = { field, message };
    out.push(item);
    // `Nullable(x)` is `anyOf [x, null]`: a bad value also fails the null branch and the union;
    // those two say nothing the x branch's reason does not, so they go when it is there.
    if (issue.keyword === 'anyOf' || (issue.keyword === 'type' && issue.params.type === 'null')) unionNoise.add(item);
  }
  // The x branch's reason may name a field inside the value (`status` of a nullable body).
  const root = context || 'body';
  const within = (inner: string, outer: string) => outer === root || inner === outer || inner.startsWith(`${outer}.`);
  return out.filter((e) => !unionNoise.has(e) || !out.some((o) => !unionNoise.has(o) && within(o.field, e.field)));
}
