// Proves the test harness (test/support/run.ts): a private database per test, HTTPS with the
// generated certificate trusted by Node (verification left on), and test files run in groups.
import { spawnSync } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createServer, request } from 'node:https';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import t from 'tap';
import { createTestDatabase } from './db.ts';

t.test('createTestDatabase gives a private database that is dropped afterwards', async (t) => {
  let name = '';
  await t.test('use it', async (t) => {
    const url = await createTestDatabase(t);
    name = new URL(url).pathname.slice(1);
    t.match(name, /^t_[0-9a-f]+$/);
    const rows = await query(url, 'SELECT current_database() AS db, 1 + 1 AS two');
    t.same(rows, [{ db: name, two: 2 }]);
  });
  const left = await query(process.env.LABDATA_TEST_ADMIN_URL!, 'SELECT 1 FROM pg_database WHERE datname = $1', [name]);
  t.same(left, [], 'dropped in teardown');
});

t.test('an https server with the test certificate is trusted by fetch and https.request', async (t) => {
  t.not(process.env.NODE_TLS_REJECT_UNAUTHORIZED, '0', 'certificate verification is on');
  const [cert, key] = await Promise.all([
    readFile(process.env.LABDATA_TEST_TLS_CERT!),
    readFile(process.env.LABDATA_TEST_TLS_KEY!),
  ]);
  const server = createServer({ cert, key }, (_req, res) => res.end('hello'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    server.closeAllConnections(); // fetch keeps its connection alive
    server.close();
  });
  const { port } = server.address() as AddressInfo;

  const res = await fetch(`https://localhost:${port}/`);
  t.equal(res.status, 200);
  t.equal(await res.text(), 'hello');
  t.equal(await httpsGet(`https://127.0.0.1:${port}/`), 'hello');
});

t.test('a group runs its files in turn, each with a `t` of its own that ends before the next file starts', async (t) => {
  const dir = t.testdir({
    'a.test.ts': `import t from 'tap';
globalThis.order = ['a loaded'];
t.teardown(() => globalThis.order.push('a torn down'));
t.test('first', async (t) => { globalThis.order.push('a tested'); t.pass('a passes'); });
`,
    'b.test.ts': `import t from 'tap';
t.test('second', async (t) => { t.same(globalThis.order, ['a loaded', 'a tested', 'a torn down']); });
t.test('third', async (t) => { t.equal(process.env.B_SHOULD_FAIL, undefined, 'b fails when told to'); });
`,
  });
  const runner = pathToFileURL(join(import.meta.dirname, 'group.ts')).href;
  const files = [join(dir, 'a.test.ts'), join(dir, 'b.test.ts')];
  const group = join(dir, 'group.ts');
  await writeFile(group, `import { runGroup } from ${JSON.stringify(runner)};\nawait runGroup(${JSON.stringify(dir)}, ${JSON.stringify(files)});\n`);

  const run = (env: NodeJS.ProcessEnv = {}) => spawnSync(process.execPath, [group], { encoding: 'utf8', env: { ...process.env, ...env } });
  const ok = run();
  t.equal(ok.status, 0, 'the group passes', { output: ok.stdout + ok.stderr });
  t.match(ok.stdout, /^ok 1 - a\.test\.ts/m, 'a file is a subtest named after it');
  t.match(ok.stdout, /^ok 2 - b\.test\.ts/m);
  t.match(ok.stdout, /^ {4}ok 1 - first/m, "a file's tests are its subtest's");

  const failing = run({ B_SHOULD_FAIL: '1' });
  t.not(failing.status, 0, 'a failure in a file fails the group');
  t.match(failing.stdout, /^not ok 2 - b\.test\.ts/m, 'and is reported under the file');
});

async function query(url: string, sql: string, params: unknown[] = []): Promise<unknown[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql, params)).rows;
  } finally {
    await client.end();
  }
}

function httpsGet(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    request(url, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (chunk: string) => (body += chunk)).on('end', () => resolve(body));
    })
      .on('error', reject)
      .end();
  });
}
