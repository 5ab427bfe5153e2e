import type { SwaggerOptions } from '@fastify/swagger';
import type { TSchema } from '@sinclair/typebox';
import type { Kernel } from '../../core/kernel/kernel.ts';
import { isCreate } from './idempotency.ts';

/**
 * The OpenAPI document of the public v1 surface (spec, "Machine-readable description and
 * explorer"). @fastify/swagger collects the routes; this module adds what a client generator
 * or a linter needs and a route schema cannot say: summaries, declared tags, named schemas
 * referenced by `$ref`, the error responses of every operation, the license.
 */

export const PUBLIC_MOUNT = '/api/v1';

/** `list_projects` → "List projects": the default summary of an operation. */
const summaryOf = (name: string) => name.charAt(0).toUpperCase() + name.slice(1).replaceAll('_', ' ');

/** `/projects/:id` → `/api/v1/projects/{id}`. */
export const openApiPath = (path: string) => PUBLIC_MOUNT + path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');

/** The security schemes (spec, "Authentication" rule 2); every operation accepts either. */
export const SECURITY_SCHEMES = {
  ApiKey: { type: 'apiKey', in: 'header', name: 'X-API-KEY', description: 'The API key, `key_<keyId>.<secret>`' },
  ApiKeyAuthorization: { type: 'apiKey', in: 'header', name: 'Authorization', description: '`ApiKey <key>`' },
} as const;

export const SECURITY: Record<string, string[]>[] = Object.keys(SECURITY_SCHEMES).map((name) => ({ [name]: [] }));

/** The spec's error envelope (app/http/envelope.ts), as a named schema. */
const ErrorEnvelope = {
  type: 'object',
  description: 'Every error with a body (spec, "Errors"); `details` and `errors` come with validation failures',
  required: ['timestamp', 'statusCode', 'error', 'message', 'path'],
  properties: {
    timestamp: { type: 'string', format: 'date-time' },
    statusCode: { type: 'integer', example: 404 },
    error: { type: 'string', description: 'The status text', example: 'Not Found' },
    message: { type: 'string' },
    path: { type: 'string', description: 'The request path, without the query', example: '/api/v1/projects/00000000-0000-4000-8000-000000000000' },
    details: { type: 'string', description: '`field: message` pairs joined by "; "' },
    errors: {
      type: 'array',
      items: { type: 'object', required: ['field', 'message'], properties: { field: { type: 'string' }, message: { type: 'string' } } },
    },
  },
};

const schemaRef = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const responseRef = (name: string) => ({ $ref: `#/components/responses/${name}` });

/** 401 and 403 have empty bodies (spec, "Errors"); every other error carries the envelope. */
const ERROR_RESPONSES = {
  Error: {
    description: 'The error envelope: 400 invalid input, 404 not found or not visible, 409 conflict',
    content: { 'application/json': { schema: schemaRef('ErrorEnvelope') } },
  },
  Unauthorized: { description: 'No valid API key (missing, malformed, expired or revoked); empty body' },
  Forbidden: { description: 'The record is visible but the caller may not change it (contributors, owners or admins only); empty body' },
  TooManyRequests: {
    description: "The API key's requests per minute are used up (docs/api.md, \"Rate limits\")",
    headers: { 'Retry-After': { $ref: '#/components/headers/RetryAfter' } },
    content: { 'application/json': { schema: schemaRef('ErrorEnvelope') } },
  },
  Unavailable: {
    description: 'The database is unreachable; retry after the given seconds',
    headers: { 'Retry-After': { $ref: '#/components/headers/RetryAfter' } },
    content: { 'application/json': { schema: schemaRef('ErrorEnvelope') } },
  },
  NotModified: { description: 'The record still has the `If-None-Match` entity tag; empty body', headers: { ETag: { $ref: '#/components/headers/ETag' } } },
  PreconditionFailed: {
    description: 'The record no longer has the `If-Match` entity tag (changed since it was read)',
    content: { 'application/json': { schema: schemaRef('ErrorEnvelope') } },
  },
};

/** Names of the shared responses by status (the test and the document agree on these). */
export const SHARED_RESPONSE: Record<number, string> = { 401: 'Unauthorized', 403: 'Forbidden', 304: 'NotModified', 412: 'PreconditionFailed', 429: 'TooManyRequests', 503: 'Unavailable' };

const HEADERS = {
  RetryAfter: { description: 'Seconds to wait before retrying', schema: { type: 'integer' } },
  ETag: { description: "The record representation's entity tag (strong)", schema: { type: 'string' } },
  Location: { description: "The new record's URL", schema: { type: 'string' } },
};

/** The conditional and retry headers a caller may send (app/http/conditional.ts, app/http/idempotency.ts). */
const PARAMETERS = {
  IfNoneMatch: { in: 'header', name: 'If-None-Match', required: false, description: 'An entity tag from an earlier GET: 304 while it still matches', schema: { type: 'string' } },
  IfMatch: { in: 'header', name: 'If-Match', required: false, description: 'The entity tag the change is based on: 412 when the record has changed since', schema: { type: 'string' } },
  IdempotencyKey: {
    in: 'header',
    name: 'Idempotency-Key',
    required: false,
    description: 'Retry-safe creates: the same key and body within 24 h return the first response; another body is 409',
    schema: { type: 'string', maxLength: 255 },
  },
};
const parameterRef = (name: keyof typeof PARAMETERS) => ({ $ref: `#/components/parameters/${name}` });
const headerRef = (name: keyof typeof HEADERS) => ({ $ref: `#/components/headers/${name}` });

interface Operation {
  summary?: string;
  callbacks?: Record<string, Record<string, Record<string, Record<string, any>>>>;
  tags?: string[];
  parameters?: unknown[];
  requestBody?: unknown;
  responses: Record<string, { description?: string; headers?: Record<string, unknown>; content?: Record<string, { schema?: Record<string, any> }> } | { $ref: string }>;
}

type Document = {
  tags?: { name: string; description: string }[];
  components: { schemas?: Record<string, unknown>; responses?: Record<string, unknown>; parameters?: Record<string, unknown>; headers?: Record<string, unknown> };
  paths: Record<string, Record<string, Operation>>;
};

/** A write's `callbacks` as its definition gives them (name → URL expression → method → operation). */
type Callbacks = Record<string, Record<string, Record<string, Record<string, any>>>>;

const pascal = (words: string) => words.split(/[_\s-]+/).filter(Boolean).map((w) => w[0].toUpperCase() + w.slice(1)).join('');

/** Component names by schema identity: a schema's `title`, else the name of an operation showing it, without the verb. */
class SchemaNames {
  readonly #names = new Map<TSchema, string>();
  readonly #taken = new Set<string>(['ErrorEnvelope']);

  /** The name already given to `schema`, if any. */
  known(schema: unknown): string | undefined {
    return this.#names.get(schema as TSchema);
  }

  of(schema: TSchema, operationName: string): string {
    const known = this.#names.get(schema);
    if (known) return known;
    const base = typeof schema.title === 'string' ? pascal(schema.title) : pascal(operationName.replace(/^[a-z]+_/, ''));
    let name = base;
    for (let i = 2; this.#taken.has(name) || this.#taken.has(name.replace(/Page$/, '')); i++) name = `${base}${i}`;
    this.#taken.add(name);
    this.#names.set(schema, name);
    return name;
  }
}

/** The operation's JSON body schema for a status, if it has one. */
function bodyOf(op: Operation, status: number) {
  const response = op.responses[String(status)];
  return response && 'content' in response ? response.content?.['application/json'] : undefined;
}

function describe(kernel: Kernel, doc: Document): Document {
  const schemas: Record<string, unknown> = { ErrorEnvelope };
  const names = new SchemaNames();
  // The first operation that shows a schema lends its converted form to the component.
  const name = (media: { schema?: Record<string, any> } | undefined, schema: TSchema, operation: string) => {
    if (!media?.schema) return;
    const component = names.of(schema, operation);
    schemas[component] ??= media.schema;
    media.schema = schemaRef(component);
  };
  // `path` in Fastify syntax: a path id (`:id`) that names no visible record is a 404.
  const errors = (op: Operation, path: string, extra: readonly number[], body?: TSchema) => {
    // Every operation may meet the rate limit (429) and a database outage (503).
    const statuses = new Set<number>([401, 429, 503, ...extra]);
    if (op.parameters?.length || op.requestBody) statuses.add(400);
    // A body may be too large (413) or not UTF-8 JSON (415), and may name a record that is not there (404).
    if (op.requestBody) [413, 415].forEach((s) => statuses.add(s));
    if (path.includes(':') || namesRecord(body)) statuses.add(404);
    for (const status of [...statuses].sort()) op.responses[String(status)] = responseRef(SHARED_RESPONSE[status] ?? 'Error');
  };
  const header = (op: Operation, name: keyof typeof PARAMETERS) => (op.parameters ??= []).push(parameterRef(name));
  const responseHeader = (op: Operation, status: number, name: keyof typeof HEADERS) => {
    const response = op.responses[String(status)];
    if (response && !('$ref' in response)) response.headers = { ...response.headers, [name]: headerRef(name) };
  };

  const operation = (method: string, path: string) => {
    const op = doc.paths[openApiPath(path)]?.[method];
    if (!op) throw new Error(`OpenAPI: ${method.toUpperCase()} ${path} is not in the document`);
    return op;
  };
  // Names come from the look-ups first (`get_project` → Project), then writes, then lists.
  for (const def of kernel.reads) if (!def.paged) names.of(def.response, def.name);
  for (const def of kernel.writes) if (def.response) names.of(def.response, def.operationId);
  for (const def of kernel.reads) {
    const op = operation('get', def.path);
    op.summary = def.summary ?? summaryOf(def.name);
    const media = bodyOf(op, 200);
    if (def.paged && media?.schema) {
      // A page names its item too: `ProjectPage` is `content: Project[]` plus the paging fields.
      const item = names.of(def.response, def.name);
      const items = media.schema.properties.content;
      schemas[item] ??= items.items;
      items.items = schemaRef(item);
      schemas[`${item}Page`] ??= media.schema;
      media.schema = schemaRef(`${item}Page`);
    } else {
      name(media, def.response, def.name);
    }
    op.responses['200'] = { ...op.responses['200'], description: def.paged ? 'A page of records' : 'The record' };
    // A record GET carries an ETag and answers If-None-Match with 304 (app/http/record-routes.ts).
    errors(op, def.path, def.paged ? [] : [304]);
    if (!def.paged) {
      responseHeader(op, 200, 'ETag');
      header(op, 'IfNoneMatch');
    }
  }
  for (const def of kernel.writes) {
    const op = operation(def.method.toLowerCase(), def.path);
    op.summary = def.summary ?? summaryOf(def.operationId);
    for (const status of [def.status, def.alternativeStatus]) {
      if (!status || status === 204 || !def.response) continue;
      name(bodyOf(op, status), def.response, def.operationId);
      op.responses[String(status)] = { ...op.responses[String(status)], description: status === 201 ? 'Created' : 'The record after the change' };
    }
    // The same rule as the route (app/http/operations.ts): a body of optional fields may be left out.
    if (op.requestBody && !(def.body as { required?: string[] } | undefined)?.required?.length) (op.requestBody as { required?: boolean }).required = false;
    // A `version` in the body is an optimistic lock: a stale one is a 409.
    const versioned = Boolean((def.body as { properties?: Record<string, unknown> } | undefined)?.properties?.version);
    // As the If-Match guards (app/http/record-routes.ts): every PUT, PATCH, DELETE and POST action
    // (not a create); one on a record without a GET has no tag, so only `*` holds there.
    const guarded = ['PUT', 'PATCH', 'DELETE'].includes(def.method) || (def.method === 'POST' && !isCreate(def));
    errors(op, def.path, [...(def.errors ?? []), ...(versioned ? [409] : []), ...(guarded ? [412] : [])], def.body);
    if (guarded) header(op, 'IfMatch');
    if (isCreate(def)) {
      header(op, 'IdempotencyKey');
      if (!op.responses['409']) op.responses['409'] = responseRef('Error');
    }
    if (def.status === 201 || def.alternativeStatus === 201) responseHeader(op, 201, 'Location');
    if (def.callbacks) describeCallbacks(op, def.callbacks as Callbacks, def.operationId);
  }

  /**
   * @fastify/swagger keeps only a callback's request body and responses: its summary, description
   * and header parameters come back from the definition; its body schema becomes a named schema,
   * whose properties refer to the named schemas they are (a webhook event's `data` is `Activity`).
   */
  function describeCallbacks(op: Operation, callbacks: Callbacks, operationId: string) {
    for (const [event, urls] of Object.entries(callbacks)) {
      for (const [url, methods] of Object.entries(urls)) {
        for (const [method, spec] of Object.entries(methods)) {
          const target = op.callbacks?.[event]?.[url]?.[method];
          if (!target) continue;
          const { requestBody, responses: _responses, ...rest } = spec;
          Object.assign(target, rest);
          const schema: TSchema | undefined = requestBody?.content?.['application/json']?.schema;
          const media = target.requestBody?.content?.['application/json'];
          if (!schema || !media?.schema) continue;
          const converted = media.schema;
          name(media, schema, `${operationId}_${event}`);
          for (const [key, property] of Object.entries((schema.properties ?? {}) as Record<string, unknown>)) {
            const known = names.known(property);
            if (known && converted.properties?.[key]) converted.properties[key] = schemaRef(known);
          }
        }
      }
    }
  }

  const declared = new Map<string, string>();
  for (const plugin of kernel.plugins) for (const [tag, description] of Object.entries(plugin.tags ?? {})) declared.set(tag, description);
  const used = [...kernel.reads, ...kernel.writes].flatMap((d) => d.tags ?? []);
  for (const tag of used) if (!declared.has(tag)) declared.set(tag, `Operations tagged ${tag}.`);
  const usedSet = new Set(used);
  doc.tags = [...declared].filter(([tag]) => usedSet.has(tag)).map(([tag, description]) => ({ name: tag, description }));
  doc.components.schemas = { ...doc.components.schemas, ...schemas };
  doc.components.responses = { ...doc.components.responses, ...ERROR_RESPONSES };
  doc.components.parameters = { ...doc.components.parameters, ...PARAMETERS };
  doc.components.headers = { ...doc.components.headers, ...HEADERS };
  return doc;
}

/** The @fastify/swagger options for the public document of this kernel's operations. */
export function openapiOptions(kernel: Kernel): SwaggerOptions {
  const isPublic = (url: string) => url === PUBLIC_MOUNT || url.startsWith(PUBLIC_MOUNT + '/');
  return {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'Lab Data Service public API',
        version: '1.0.0-beta',
        description:
          'Projects, studies, assays and the records around them. Every request needs an API key (`X-API-KEY` header, ' +
          'or `Authorization: ApiKey <key>`). Lists take `page` (0-based), `size` and `sort=field,direction`. ' +
          'Errors carry the error envelope, except 401 and 403 whose bodies are empty; a record you may not view is a 404.',
        license: { name: 'Proprietary' },
      },
      servers: [{ url: '/' }],
      components: { securitySchemes: SECURITY_SCHEMES },
      security: SECURITY,
    },
    // Only the public v1 surface is documented (not the beta alias, /mcp, /docs or probes).
    transform: ({ schema, url }) => ({ schema: { ...schema, hide: schema?.hide || !isPublic(url) }, url }),
    transformObject: (document) => describe(kernel, (document as { openapiObject: unknown }).openapiObject as Document) as never,
  };
}

/** Whether a body schema holds an id (a `Uuid()` anywhere in it): one naming no visible record is a 404. */
function namesRecord(schema: unknown): boolean {
  if (!schema || typeof schema !== 'object') return false;
  if ((schema as { format?: string }).format === 'uuid') return true;
  return Object.values(schema).some(namesRecord);
}
