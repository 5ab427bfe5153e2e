// An integrator's path: generate a typed client from the served OpenAPI document
// (openapi-typescript + openapi-fetch), type-check it strictly, and use it against the server.
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import openapiTS, { astToString } from 'openapi-typescript';
import t from 'tap';
import { startTestServer } from '../support/server.ts';

const server = await startTestServer(t);
const member = await server.member(await server.organization());

// The program an integrator writes: every type comes from the generated `paths`/`components`.
const CLIENT = `import createClient from 'openapi-fetch';
import type { components, paths } from './public-v1.ts';

type Project = components['schemas']['Project'];
type ErrorEnvelope = components['schemas']['ErrorEnvelope'];

export async function run(baseUrl: string, key: string) {
  const client = createClient<paths>({ baseUrl, headers: { 'X-API-KEY': key } });
  const created = await client.POST('/api/v1/projects', {
    body: { code: 'TC-1', name: 'Typed client', description: 'Made by a generated client', visibility: 'PRIVATE' },
  });
  if (!created.data) throw new Error('create failed: ' + created.response.status);
  const project: Project = created.data;
  const read = await client.GET('/api/v1/projects/{id}', { params: { path: { id: project.id } } });
  const page = await client.GET('/api/v1/projects', { params: { query: { page: 0, size: 5, sort: ['name,asc'] } } });
  const names: string[] = (page.data?.content ?? []).map((p) => p.name);
  const missing = await client.GET('/api/v1/projects/{id}', { params: { path: { id: '00000000-0000-4000-8000-000000000000' } } });
  const error: ErrorEnvelope | undefined = missing.error;
  const message: string | undefined = error?.message;

  // The generated types are strict: a wrong field type or an unknown path does not compile.
  // @ts-expect-error code is a string
  void client.POST('/api/v1/projects', { body: { code: 1, name: 'x', description: 'x' } });
  // @ts-expect-error no such path
  void client.GET('/api/v1/no-such-records');

  return {
    createdStatus: created.response.status,
    project,
    read: read.data,
    names,
    missingStatus: missing.response.status,
    error,
    message,
  };
}
`;

t.test('a client generated from the served document type-checks and works', async (t) => {
  const res = await server.get('/docs/api-docs/public-v1', { key: member.key });
  t.equal(res.status, 200);
  const dir = t.testdir({
    'package.json': JSON.stringify({ type: 'module' }),
    'tsconfig.json': JSON.stringify({
      compilerOptions: {
        strict: true,
        noEmit: true,
        target: 'es2022',
        module: 'nodenext',
        moduleResolution: 'nodenext',
        allowImportingTsExtensions: true,
        noUncheckedIndexedAccess: true,
        exactOptionalPropertyTypes: true,
        skipLibCheck: true,
        types: [],
        lib: ['es2022', 'dom'],
      },
      include: ['*.ts'],
    }),
    'client.ts': CLIENT,
  });
  await writeFile(path.join(dir, 'public-v1.ts'), astToString(await openapiTS(res.body)));

  // tsc in strict mode over the generated types and the program (the test's temp dir is
  // inside the repository, so `openapi-fetch` resolves from its node_modules).
  const tsc = path.resolve(import.meta.dirname, '../../node_modules/typescript/bin/tsc');
  const checked = await promisify(execFile)(process.execPath, [tsc, '-p', dir]).then(
    () => ({ code: 0, out: '' }),
    (e: { code: number; stdout: string }) => ({ code: e.code, out: e.stdout }),
  );
  t.same(checked, { code: 0, out: '' }, 'tsc --strict accepts the generated client');

  const { run } = (await import(pathToFileURL(path.join(dir, 'client.ts')).href)) as {
    run(baseUrl: string, key: string): Promise<Record<string, any>>;
  };
  const result = await run(server.url, member.key);
  t.equal(result.createdStatus, 201);
  t.match(result.project, { code: 'TC-1', name: 'Typed client', visibility: 'PRIVATE' });
  t.same(result.read, result.project, 'read back as created');
  t.same(result.names, ['Typed client']);
  t.equal(result.missingStatus, 404);
  t.match(result.error, { statusCode: 404, error: 'Not Found', path: '/api/v1/projects/00000000-0000-4000-8000-000000000000' }, 'a typed error envelope');
  t.type(result.message, 'string');
});
