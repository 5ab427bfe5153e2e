// Through PgBouncer in transaction mode (LABDATA_DATABASE_POOLER=transaction), tested with Debian's
// pgbouncer 1.18 in front of Debian's PostgreSQL 15 (test/support/replication.ts): two `labdata
// serve` instances at once, the admin CLI, every plugin's writes and every read of the OpenAPI
// document, the MCP tools, provisioning jobs and revocation. Statements never outlive their
// transaction (no "prepared statement does not exist"), and session work (LISTEN, migration
// locks, the job queue) goes to LABDATA_DATABASE_DIRECT_URL.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { createDatabase, pgbouncerIni, sqlOn, startPgbouncer, startPrimary } from '../support/replication.ts';
import { dataDir, serve, type Served } from '../support/serve-process.ts';
import { runCliInProcess, tempFile } from '../cli/labdata-cli.ts';
import { connectMcp } from '../support/mcp.ts';

t.test('docs/operations.md shows the pgbouncer.ini the tests run', async (t) => {
  const page = readFileSync(new URL('../../docs/operations.md', import.meta.url), 'utf8');
  const block = /cat > \$D\/pgbouncer\.ini <<'INI'\n([\s\S]*?)INI\n/.exec(page)?.[1];
  t.equal(block, pgbouncerIni({ primaryPort: 'PRIMARY_PORT', port: 'PORT', dir: 'DIR' }));
});

const primary = await startPrimary(t);
const pooler = await startPgbouncer(t, primary);
await createDatabase(primary, 'labdata');
const dir = dataDir(t);
const env = {
  LABDATA_DATABASE_URL: pooler.url('labdata'),
  LABDATA_DATABASE_DIRECT_URL: primary.url('labdata'),
  LABDATA_DATABASE_POOLER: 'transaction',
  LABDATA_DATA_DIR: dir,
  LABDATA_TLS_CERT: process.env.LABDATA_TEST_TLS_CERT!,
  LABDATA_TLS_KEY: process.env.LABDATA_TEST_TLS_KEY!,
  LABDATA_RATE_LIMIT_PER_MINUTE: '0',
};

// The admin CLI through the pooler: it migrates (on the direct connection) and provisions.
const boot = await runCliInProcess(['bootstrap', await tempFile({
  organizations: [{ ref: 'o', name: 'Pooled' }],
  users: [
    { ref: 'admin', email: 'admin@pooled.test', memberships: [{ organization: 'o', roles: ['ORGANIZATION_ADMIN'] }] },
    { ref: 'user', email: 'user@pooled.test', memberships: [{ organization: 'o', roles: ['ORGANIZATION_USER'] }] },
  ],
  apiKeys: [{ ref: 'admin', user: 'admin', organization: 'o', name: 'k', days: 7 }, { ref: 'user', user: 'user', organization: 'o', name: 'k', days: 7 }],
})], env);
if (boot.code !== 0) throw new Error(boot.stderr);
const adminKey: string = boot.json.apiKeys.admin.key;
const userKey: string = boot.json.apiKeys.user.key;
const userId: string = boot.json.users.user.id;
const [a, b] = await Promise.all([serve(t, env), serve(t, env)]);
const instances = [a, b];
const base = (s: Served) => s.url.replace('127.0.0.1', 'localhost');

let turn = 0;
/** A request to the instances in turn: every step of the test runs on both. */
async function call(method: string, path: string, body?: unknown, key = adminKey) {
  const s = instances[turn++ % 2];
  const res = await fetch(base(s) + path, {
    method,
    headers: { 'x-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text && res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : undefined, text };
}
async function create(path: string, body: unknown, key = adminKey): Promise<string> {
  const res = await call('POST', '/api/v1' + path, body, key);
  if (res.status !== 201) throw new Error(`${path}: ${res.status} ${res.text}`);
  return res.body.id;
}

t.test('every plugin\'s writes, through the pooler, on two instances', async (t) => {
  const project = await create('/projects', { code: 'P-1', name: 'Pooled project', description: 'd', visibility: 'PUBLIC' });
  const study = await create('/studies', { projectId: project, name: 'S', code: 'POOL-1' });
  const other = await create('/studies', { projectId: project, name: 'S2' });
  const type = await create('/assay-types', { name: 'ELISA', status: 'ACTIVE' });
  const assay = await create('/assays', { studyId: study, assayTypeId: type, name: 'A' });
  const ids: Record<string, string> = {
    projects: project, studies: study, assays: assay, 'assay-types': type,
    'projects/tasks': await create(`/projects/${project}/tasks`, { label: 'T' }),
    'studies/tasks': await create(`/studies/${study}/tasks`, { label: 'T' }),
    'assays/tasks': await create(`/assays/${assay}/tasks`, { label: 'T' }),
    'projects/external-links': await create(`/projects/${project}/external-links`, { label: 'L', url: 'https://example.org' }),
    'studies/external-links': await create(`/studies/${study}/external-links`, { label: 'L', url: 'https://example.org' }),
    'assays/external-links': await create(`/assays/${assay}/external-links`, { label: 'L', url: 'https://example.org' }),
    'study-collections': await create('/study-collections', { name: 'C', visibility: 'PUBLIC' }),
    relationships: await create(`/studies/${study}/relationships`, { type: 'IS_RELATED_TO', targetStudyId: other }),
    keywords: await create('/keywords', { value: 'pooled' }),
    collaborators: await create('/collaborators', { label: 'Collab' }),
    teams: await create('/teams', { name: 'Team', userIds: [userId] }),
    access: await create(`/projects/${project}/access`, { userId }),
  };
  const steps: [string, string, unknown][] = [
    ['POST', `/api/v1/study-collections/${ids['study-collections']}/studies/${study}`, undefined],
    ['PUT', `/api/v1/projects/${project}`, { name: 'Renamed' }],
    ['POST', `/api/v1/studies/${study}/status`, { status: 'ON_HOLD' }],
    ['POST', `/api/v1/assays/${assay}/archive?archived=true`, undefined],
    ['PATCH', `/api/v1/projects/${project}/tasks/${ids['projects/tasks']}/complete`, {}],
    ['PUT', `/api/v1/collaborators/${ids.collaborators}`, { label: 'Collab 2' }],
    ['DELETE', `/api/v1/collaborators/${await create('/collaborators', { label: 'Gone' })}`, undefined],
    ['PATCH', `/api/v1/studies/${other}/move`, { projectId: project }],
  ];
  for (const [method, path, body] of steps) {
    const res = await call(method, path, body);
    t.ok(res.status < 300, `${method} ${path}: ${res.status} ${res.status >= 300 ? res.text : ''}`);
  }
  // Provisioning runs in the job queue (pg-boss, on the direct connection): the project's folder on the default drive.
  let status = '';
  for (let i = 0; i < 100 && status !== 'ACTIVE'; i++) {
    status = (await call('GET', `/api/v1/projects/${project}`)).body.status;
    if (status !== 'ACTIVE') await new Promise((r) => setTimeout(r, 100));
  }
  t.equal(status, 'ACTIVE', 'the provisioning job ran');

  // Every read of the OpenAPI document, the ids filled in from the records above.
  const doc = (await call('GET', '/docs/api-docs/public-v1')).body;
  const folders = (await call('GET', `/api/v1/projects/${project}/storage-folders`)).body.content;
  const drives = (await call('GET', '/api/v1/storage-drives')).body.content;
  const users = (await call('GET', '/api/v1/organization-users')).body.content;
  const activity = (await call('GET', '/api/v1/activity')).body.content;
  Object.assign(ids, { 'projects/storage-folders': folders[0].id, 'storage-drives': drives[0].id, 'organization-users': users[0].id, users: users[0].user.id, activity: activity[0].id });
  const failures: string[] = [];
  let read = 0;
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    if (!item.get) continue;
    let missing = false;
    const url = path.replace(/\{(\w+)\}/g, (_m, name: string, offset: number) => {
      const segments = path.slice(0, offset).split('/').filter(Boolean);
      const [parent, segment] = [segments.at(-3), segments.at(-1)!];
      const id = name === 'projectId' ? project : name === 'studyId' ? study : name === 'assayId' ? assay : ids[`${parent}/${segment}`] ?? ids[segment];
      if (!id) missing = true;
      return id ?? '00000000-0000-4000-8000-000000000000';
    });
    if (missing) continue; // a record of a kind this test made none of (notes, integrations, shared folders)
    const res = await call('GET', url);
    read++;
    // A record without a Git repository answers its repository's read with a 404 naming it.
    if (res.status === 404 && url.endsWith('/git-repository') && /Git repository of/.test(res.text)) continue;
    if (res.status !== 200) failures.push(`GET ${url}: ${res.status} ${res.text.slice(0, 200)}`);
  }
  t.same(failures, [], `${read} reads answered 200`);
  t.ok(read >= 30, `most of the document's reads were made (${read})`);
});

t.test('MCP through the pooler', async (t) => {
  for (const s of instances) {
    const client = await connectMcp(base(s), { key: userKey, teardown: (fn) => t.teardown(fn) });
    const { tools } = await client.listTools();
    t.ok(tools.length >= 52, `${tools.length} tools`);
    const res: any = await client.callTool({ name: 'list_projects', arguments: { size: 5 } });
    t.notOk(res.isError, JSON.stringify(res.content).slice(0, 200));
    t.equal(res.structuredContent.content[0].name, 'Renamed');
  }
});

t.test('revocation is immediate on both instances (notifications heard on the direct connection)', async (t) => {
  const key = await runCliInProcess(['keys', 'create', '--user', userId, '--organization', boot.json.organizations.o.id, '--name', 'short', '--days', '7'], env);
  t.equal(key.code, 0, key.stderr);
  for (const s of instances) t.equal((await fetch(base(s) + '/api/v1/projects', { headers: { 'x-api-key': key.json.key } })).status, 200);
  const revoked = await runCliInProcess(['keys', 'revoke', key.json.id], env);
  t.equal(revoked.code, 0, revoked.stderr);
  for (const s of instances) t.equal((await fetch(base(s) + '/api/v1/projects', { headers: { 'x-api-key': key.json.key } })).status, 401, 'refused on the next request');
});

t.test('the pooler saw no session state: no prepared statement error, settings as the service needs them', async (t) => {
  for (const s of instances) {
    t.notMatch(s.stderr(), /prepared statement|does not exist|unsupported startup parameter/i, 'no statement outlived its transaction');
    const ready = await fetch(base(s) + '/readyz').then((r) => r.json());
    t.match(ready, { status: 'ready', databases: [{ name: 'primary', via: 'pooler (transaction mode)' }] });
  }
  const [{ jit, workers }] = await sqlOn(pooler.url('labdata'), `select current_setting('jit') as jit, current_setting('max_parallel_workers_per_gather') as workers`);
  t.same([jit, workers], ['off', '0'], 'sessions through the pooler run without JIT and parallel workers (database defaults)');
});
