import t from 'tap';
import fastJson from 'fast-json-stringify';
import { Type } from '@sinclair/typebox';
import { compileSerializer, nullableForSerializer } from '../../app/http/compilers.ts';
import { schemas } from '../../core/public.ts';

// Responses are serialized from their schemas with `anyOf: [X, null]` read as a nullable X
// (app/http/compilers.ts): the bytes must be what the schema as documented gives.

const Item = Type.Object({
  id: schemas.Uuid(),
  projectId: schemas.Nullable(schemas.Uuid()),
  due: schemas.Nullable(schemas.Timestamp()),
  count: schemas.Nullable(Type.Integer()),
  owner: schemas.Nullable(Type.Object({ id: schemas.Uuid(), name: Type.String() })),
  tags: schemas.Nullable(Type.Array(Type.String())),
  either: Type.Union([Type.String(), Type.Integer()]),
});
const Page = Type.Object({ content: Type.Array(Item) });

const id = '9133e189-f43e-4b0d-b9ef-b8a7e3c2fd35';
const full = { id, projectId: id, due: '2026-12-02T17:39:05.569Z', count: 3, owner: { id, name: 'A "quoted" name' }, tags: ['x', 'y'], either: 7 };
const empty = { id, projectId: null, due: null, count: null, owner: null, tags: null, either: 'text' };

t.test('nullable fields serialize exactly as the documented schema does, null or not', async (t) => {
  const documented = fastJson(Page as never);
  const served = compileSerializer(Page);
  const page = { content: [full, empty, full] };
  t.equal(served(page), documented(page));
  t.same(JSON.parse(served(page)).content[1], empty, 'nulls stay null');
});

t.test('only anyOf [X, null] with a plain X is rewritten; the documented schema is left as it was', async (t) => {
  const rewritten = nullableForSerializer(Item) as { properties: Record<string, Record<string, unknown>> };
  t.match(rewritten.properties.projectId, { type: 'string', format: 'uuid', nullable: true });
  t.notOk('anyOf' in rewritten.properties.projectId);
  t.same(rewritten.properties.owner.nullable, true);
  t.ok(Array.isArray(rewritten.properties.either.anyOf), 'a union of two types keeps its anyOf');
  t.ok(Array.isArray((Item.properties.projectId as { anyOf?: unknown }).anyOf), 'the route\'s own schema (OpenAPI) is unchanged');
});
