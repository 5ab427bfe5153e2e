// Issue 11: a schema-driven fuzz test. Every operation of the served OpenAPI document gets
// malformed and hostile values (wrong types, huge and deep values, NUL bytes, bad UUIDs, long
// strings, unknown fields) in its path, query and body, from a fixed seed and a bounded count.
// No answer may be a 5xx; every 4xx carries the error envelope (401 and 403: empty body).
import SwaggerParser from '@apidevtools/swagger-parser';
import t from 'tap';
import { startTestServer, type Response } from '../support/server.ts';

const SEED = 0x1abda7a;
const CASES_PER_PART = 5;
const CONCURRENCY = 4;

const server = await startTestServer(t);
const admin = await server.admin(await server.organization());
const k = { key: admin.key };

/** mulberry32: a small seeded PRNG, so a failure replays exactly. */
function prng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}
const random = prng(SEED);
const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)];

const nest = (depth: number, leaf: unknown): unknown => (depth === 0 ? leaf : random() < 0.5 ? [nest(depth - 1, leaf)] : { a: nest(depth - 1, leaf) });

// Values no schema of ours asks for; strings also land in path segments and query strings.
const HOSTILE_STRINGS = [
  '', ' ', '\u0000', 'a\u0000b', 'x'.repeat(10_000), 'not-a-uuid', '00000000-0000-0000-0000-000000000000',
  crypto.randomUUID().toUpperCase(), ` ${crypto.randomUUID()} `, '9999-99-99', '2024-02-30', '2024-01-01T25:61:61Z',
  "' OR 1=1 --", '<script>alert(1)</script>', '../../etc/passwd', '%00', '%', '\uD800', '😀'.repeat(100),
  'NaN', 'Infinity', '-0', '1e999', '-1', '99999999999999999999', '__proto__', 'constructor', 'null', 'true',
  'name,desc', 'name,sideways', ',,,', 'a'.repeat(300),
] as const;
const HOSTILE_VALUES: unknown[] = [
  ...HOSTILE_STRINGS, 0, -1, 1.5, 1e308, -1e308, 2 ** 53, true, false, null, [], {}, [1, 'a', null],
  { a: 1 }, Array.from({ length: 1000 }, () => 'x'), nest(40, 'deep'), { __proto__: { polluted: true } },
];
const HOSTILE_BODIES = [
  '[]', '"text"', '42', 'null', 'true', '{', '{"a":1,}', '\uFEFF{}', `{"x":${'['.repeat(5000)}}`, '{"__proto__":{"admin":true}}',
  '{"constructor":{"prototype":{"admin":true}}}', `{"a":"${'\\u0000'.repeat(10)}"}`, JSON.stringify({ a: 'x'.repeat(900_000) }),
];

type Schema = {
  type?: string | string[];
  format?: string;
  enum?: unknown[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
  nullable?: boolean;
  minimum?: number;
  minLength?: number;
  default?: unknown;
};
type Parameter = { name: string; in: string; schema?: Schema };
type Operation = { operationId?: string; parameters?: Parameter[]; requestBody?: { content?: Record<string, { schema?: Schema }> } };

/** A plausible value for a schema, so that one part at a time can be made hostile. */
function sample(schema: Schema | undefined, depth = 0): unknown {
  if (!schema || depth > 6) return 'x';
  if (schema.enum?.length) return schema.enum[0];
  const branch = schema.anyOf ?? schema.oneOf;
  if (branch) return sample(branch.find((s) => s.type !== 'null') ?? branch[0], depth + 1);
  if (schema.allOf) return Object.assign({}, ...schema.allOf.map((s) => sample(s, depth + 1)));
  const type = Array.isArray(schema.type) ? schema.type.find((x) => x !== 'null') : schema.type;
  switch (type) {
    case 'string':
      if (schema.format === 'uuid') return crypto.randomUUID();
      if (schema.format === 'date') return '2024-01-01';
      if (schema.format === 'date-time') return '2024-01-01T00:00:00Z';
      if (schema.format === 'email') return 'fuzz@example.test';
      if (schema.format === 'uri') return 'https://example.test/x';
      return 'fuzz'.padEnd(schema.minLength ?? 4, 'z');
    case 'integer':
    case 'number':
      return schema.minimum ?? 1;
    case 'boolean':
      return true;
    case 'array':
      return [sample(schema.items, depth + 1)];
    case 'object':
    default:
      return Object.fromEntries(Object.entries(schema.properties ?? {}).map(([name, s]) => [name, sample(s, depth + 1)]));
  }
}

interface Case {
  method: string;
  url: string;
  body?: string;
  contentType?: string;
  what: string;
}

/** Percent-encodes; a lone surrogate (not encodable) becomes the invalid UTF-8 bytes a client could still send. */
function escape(text: string): string {
  try {
    return encodeURIComponent(text);
  } catch {
    return text.split(/([\uD800-\uDFFF])/).map((part, i) => (i % 2 ? '%ED%A0%80' : encodeURIComponent(part))).join('');
  }
}
const encode = (v: unknown) => escape(typeof v === 'string' ? v : JSON.stringify(v));

function casesFor(path: string, method: string, op: Operation, fixtures: Record<string, string>): Case[] {
  const params = op.parameters ?? [];
  const pathParams = params.filter((p) => p.in === 'path');
  const queryParams = params.filter((p) => p.in === 'query');
  const bodySchema = op.requestBody?.content?.['application/json']?.schema;
  // Real ids reach the handlers (and their database queries); DELETE gets fresh ones so the fixtures survive.
  const realPath = (overrides: Record<string, string> = {}) =>
    path.replace(/\{(\w+)\}/g, (_, name: string) => overrides[name] ?? (method === 'DELETE' ? crypto.randomUUID() : (fixtures[`${path.split('/')[3]}:${name}`] ?? fixtures[name] ?? crypto.randomUUID())));
  const validQuery = () => queryParams.filter(() => random() < 0.5).map((p) => `${p.name}=${encode(sample(p.schema))}`).join('&');
  const validBody = () => (bodySchema ? JSON.stringify(sample(bodySchema)) : undefined);
  const out: Case[] = [{ method, url: realPath(), body: validBody(), what: 'plausible input' }];

  for (let i = 0; i < CASES_PER_PART && pathParams.length; i++) {
    const param = pick(pathParams);
    const value = pick(HOSTILE_STRINGS);
    // Sometimes raw, so the router sees a bad escape or an extra segment, not only an encoded one.
    const raw = random() < 0.2 ? String(value) : escape(value);
    out.push({ method, url: realPath({ [param.name]: raw }), body: validBody(), what: `path ${param.name}=${JSON.stringify(value).slice(0, 40)}` });
  }
  for (let i = 0; i < CASES_PER_PART && queryParams.length; i++) {
    const param = pick(queryParams);
    const value = pick(HOSTILE_VALUES);
    const repeat = random() < 0.3 ? `&${param.name}=${encode(pick(HOSTILE_VALUES))}` : '';
    out.push({ method, url: `${realPath()}?${param.name}=${encode(value)}${repeat}&unknownParam=1`, body: validBody(), what: `query ${param.name}=${JSON.stringify(value)?.slice(0, 40)}` });
  }
  out.push({ method, url: `${realPath()}?${validQuery()}&${'q'.repeat(50)}=${'v'.repeat(2000)}`, body: validBody(), what: 'unknown long query parameter' });
  if (bodySchema) {
    const props = Object.keys(bodySchema.properties ?? {});
    for (let i = 0; i < CASES_PER_PART * 2 && props.length; i++) {
      const body = sample(bodySchema) as Record<string, unknown>;
      const field = pick(props);
      const value = pick(HOSTILE_VALUES);
      body[field] = value;
      out.push({ method, url: realPath(), body: JSON.stringify(body), what: `body ${field}=${JSON.stringify(value)?.slice(0, 40)}` });
    }
    for (let i = 0; i < CASES_PER_PART; i++) {
      const raw = pick(HOSTILE_BODIES);
      out.push({ method, url: realPath(), body: raw, what: `raw body ${raw.slice(0, 40)}` });
    }
    const extra = { ...(sample(bodySchema) as object), unknownField: pick(HOSTILE_VALUES), ['x'.repeat(1000)]: 1 };
    out.push({ method, url: realPath(), body: JSON.stringify(extra), what: 'unknown fields' });
    out.push({ method, url: realPath(), body: 'a=1&b=2', contentType: 'application/x-www-form-urlencoded', what: 'a form body' });
  } else if (method !== 'GET') {
    out.push({ method, url: realPath(), body: JSON.stringify({ unexpected: pick(HOSTILE_VALUES) }), what: 'a body where none is expected' });
  }
  return out;
}

async function send(c: Case): Promise<Response> {
  const headers: Record<string, string> = { 'x-api-key': admin.key };
  if (c.body !== undefined) headers['content-type'] = c.contentType ?? 'application/json';
  const res = await fetch(server.url + c.url, { method: c.method, headers, body: c.body });
  const text = await res.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  return { status: res.status, headers: res.headers, text, body };
}

/** What is wrong with an answer, or undefined. */
function problem(res: Response): string | undefined {
  if (res.status >= 500) return `${res.status}: ${res.text.slice(0, 200)}`;
  if (res.status === 401 || res.status === 403) return res.text === '' ? undefined : `${res.status} with a body`;
  if (res.status >= 400) {
    const b = res.body as Record<string, unknown> | undefined;
    const ok = b && b.statusCode === res.status && typeof b.message === 'string' && typeof b.error === 'string' && typeof b.path === 'string' && typeof b.timestamp === 'string';
    return ok ? undefined : `${res.status} without the envelope: ${res.text.slice(0, 200)}`;
  }
  return undefined;
}

t.test(`every operation of the OpenAPI document survives hostile input (seed ${SEED})`, async (t) => {
  const served = await server.get('/docs/api-docs/public-v1', k);
  t.equal(served.status, 200);
  const doc = (await SwaggerParser.dereference(structuredClone(served.body))) as unknown as { paths: Record<string, Record<string, Operation>> };

  const project = (await server.post('/api/v1/projects', { code: 'FZ', name: 'Fuzz', description: 'fuzz' }, k)).body;
  const study = (await server.post('/api/v1/studies', { name: 'Fuzz', description: 'fuzz', projectId: project.id }, k)).body;
  const fixtures: Record<string, string> = { projectId: project.id, studyId: study.id, 'projects:id': project.id, 'studies:id': study.id };

  const cases: Case[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      cases.push(...casesFor(path, method.toUpperCase(), op, fixtures));
    }
  }
  t.ok(Object.keys(doc.paths).length > 50, 'the document lists the operations');

  const failures: string[] = [];
  for (let i = 0; i < cases.length; i += CONCURRENCY) {
    const batch = cases.slice(i, i + CONCURRENCY);
    const answers = await Promise.all(batch.map(send));
    answers.forEach((res, j) => {
      const p = problem(res);
      if (p) failures.push(`${batch[j].method} ${batch[j].url.slice(0, 120)} [${batch[j].what}] → ${p}`);
    });
  }
  t.ok(cases.length > 1000, `${cases.length} requests sent`);
  t.same(failures.slice(0, 40), [], `no 5xx, envelope on every 4xx (${failures.length} failures)`);
});
