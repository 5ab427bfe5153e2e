import t from 'tap';
import { startTestServer } from '../support/server.ts';
import { runCli, runCliInProcess, type CliResult } from './labdata-cli.ts';

// The CLI runs against the database of a running server: "works whether or not the server is running".
const server = await startTestServer(t);
// Most checks run the CLI's code in this process; 'as a process' runs the real launcher.
const cli = (args: string[], env: Record<string, string> = {}) => runCliInProcess(args, { LABDATA_DATABASE_URL: server.databaseUrl, ...env });
const launched = (args: string[]) => runCli(args, { LABDATA_DATABASE_URL: server.databaseUrl });
const org = await server.organization('Acme');
const other = await server.organization('Other');
const alice = await server.member(org);
const bob = await server.member(org);
const outsider = await server.admin(other);

type Root = typeof t; // `t` is shadowed by the parameters below
function assertRejected(t: Pick<Root, 'not' | 'equal' | 'match'>, res: CliResult, reason: RegExp) {
  t.not(res.code, 0, 'exits non-zero');
  t.equal(res.stdout, '', 'prints nothing on stdout');
  t.equal(res.reasons.length, 1, 'one reason line');
  t.match(res.reasons[0], reason);
}

const keyCount = async () => Number((await server.sql<{ n: string }>('select count(*) as n from api_key'))[0].n);
/** `keys create` for `m`, named laptop, 30 days; `change` pairs (e.g. ['--days', '5']) replace those. */
const createArgs = (change: string[] = [], m = alice) => {
  const options: Record<string, string> = { '--user': m.userId, '--organization': m.organizationId, '--name': 'laptop', '--days': '30' };
  for (let i = 0; i < change.length; i += 2) options[change[i]] = change[i + 1];
  return ['keys', 'create', ...Object.entries(options).flat()];
};

t.test('keys create prints the id and the key once; the key works', async (t) => {
  for (const days of [7, 30, 90, 365]) {
    const res = await cli(['keys', 'create', '--user', alice.userId, '--organization', org, '--name', `key-${days}`, '--days', String(days)]);
    t.equal(res.code, 0, res.stderr);
    t.same(Object.keys(res.json).sort(), ['id', 'key']);
    t.match(res.json.key, new RegExp(`^key_${res.json.id}\\.[A-Za-z0-9_-]{43}$`));
    t.equal((await server.get('/api/v1/projects', { key: res.json.key })).status, 200);
    const [row] = await server.sql<{ name: string; expires_at: string; created_at: string; organization_user_id: string }>(
      'select name, expires_at, created_at, organization_user_id from api_key where id = ?', [res.json.id]);
    t.equal(row.name, `key-${days}`);
    t.equal(row.organization_user_id, alice.organizationUserId);
    const validFor = (new Date(row.expires_at).getTime() - new Date(row.created_at).getTime()) / 86_400_000;
    t.ok(Math.abs(validFor - days) < 0.01, `valid for ${days} days`);
  }
  const max = await cli(['keys', 'create', '--user', alice.userId, '--organization', org, '--name', 'n'.repeat(64), '--days', '7']);
  t.equal(max.code, 0, 'a 64-character name is allowed');
});

t.test('keys create refuses bad input with one line and creates nothing', async (t) => {
  const before = await keyCount();
  assertRejected(t, await cli(createArgs(['--days', '5'])), /days must be one of 7, 30, 90, 365/);
  for (const days of ['0x7', '7.0', ' 30', '30 ']) assertRejected(t, await cli(createArgs(['--days', days])), /days must be one of 7, 30, 90, 365/);
  assertRejected(t, await cli(createArgs(['--name', 'x'.repeat(65)])), /at most 64 characters/);
  assertRejected(t, await cli(createArgs(['--name', '🧪'.repeat(65)])), /at most 64 characters/);
  assertRejected(t, await cli(createArgs(['--name', '   '])), /name must not be blank/);
  assertRejected(t, await cli(['keys', 'create', '--user', alice.userId, '--organization', other, '--name', 'x', '--days', '7']), new RegExp(`${alice.userId}.*not a member.*${other}`));
  assertRejected(t, await cli(['keys', 'create', '--user', alice.userId, '--organization', org, '--days', '7']), /--name is required/);
  assertRejected(t, await cli(['keys', 'create', '--user', 'alice', '--organization', org, '--name', 'x', '--days', '7']), /UUID/);
  assertRejected(t, await cli(createArgs(), { LABDATA_ENTERPRISE: 'false' }), /no API key can be created/);
  t.equal(await keyCount(), before);
});

t.test('a database it cannot use: one line naming the setting, as the server says it, exit 1', async (t) => {
  const res = await cli(['keys', 'list', '--user', alice.userId], { LABDATA_DATABASE_URL: 'postgresql://nobody@127.0.0.1:9/none' });
  t.equal(res.code, 1);
  t.equal(res.stdout, '');
  t.equal(res.reasons.length, 1, 'one reason line');
  t.match(res.reasons[0], /^labdata: cannot use the database at 127\.0\.0\.1:9\/none \(.*ECONNREFUSED.*\): check LABDATA_DATABASE_URL$/);
});

t.test('a database name that does not exist is created, and the log says so (a misspelt name shows)', async (t) => {
  const name = `missing_${Date.now()}_${process.pid}`;
  const url = new URL(server.databaseUrl);
  url.pathname = `/${name}`;
  t.teardown(() => server.sql(`drop database if exists ${name} with (force)`));
  const res = await runCli(['keys', 'list', '--user', alice.userId], { LABDATA_DATABASE_URL: url.toString() });
  t.match(res.stderr, new RegExp(`database [^ ]+/${name} does not exist: creating it \\(check LABDATA_DATABASE_URL if that name is a mistake\\)`));
  t.match(res.reasons, [new RegExp(`no user with id ${alice.userId}`)], 'then runs against the new, empty database');
});

t.test('keys list shows metadata only, never the secret or its hash', async (t) => {
  const created = (await cli(createArgs([], bob))).json;
    const res = await cli(['keys', 'list', '--user', bob.userId]);
  t.equal(res.code, 0, res.stderr);
  t.equal(res.json.length, 2);
  for (const item of res.json) {
    t.same(Object.keys(item).sort(), ['createdAt', 'expiresAt', 'id', 'lastUsedAt', 'name', 'organization', 'revokedAt']);
    t.equal(item.organization, org);
    t.equal(item.revokedAt, null);
  }
  const listed = res.json.find((k: { id: string }) => k.id === created.id);
  t.match(listed, { name: 'laptop', createdAt: /^\d{4}-\d\d-\d\dT/, expiresAt: /^\d{4}-\d\d-\d\dT/ });
  const secret = created.key.split('.')[1];
  const [{ hash }] = await server.sql<{ hash: string }>("select encode(secret_hash, 'hex') as hash from api_key where id = ?", [created.id]);
  t.notMatch(res.stdout, secret, 'no secret');
  t.notMatch(res.stdout, hash, 'no hash (hex)');
  t.notMatch(res.stdout, Buffer.from(hash, 'hex').toString('base64'), 'no hash (base64)');
  t.same((await cli(['keys', 'list', '--user', outsider.userId])).json.map((k: { id: string }) => k.id), [outsider.keyId]);
  assertRejected(t, await cli(['keys', 'list']), /--user is required/);
  assertRejected(t, await cli(['keys', 'list', '--user', '00000000-0000-4000-8000-000000000001']), /no user with id 00000000-0000-4000-8000-000000000001/);
});

t.test('keys revoke prints the revocation; the key gets 401 from the next request on', async (t) => {
  const created = (await cli(createArgs())).json;
  t.equal((await server.get('/api/v1/projects', { key: created.key })).status, 200);
  const res = await cli(['keys', 'revoke', created.id]);
  t.equal(res.code, 0, res.stderr);
  t.same(Object.keys(res.json).sort(), ['id', 'revokedAt']);
  t.equal(res.json.id, created.id);
  t.ok(!Number.isNaN(Date.parse(res.json.revokedAt)));
  t.equal((await server.get('/api/v1/projects', { key: created.key })).status, 401);
  const listed = (await cli(['keys', 'list', '--user', alice.userId])).json.find((k: { id: string }) => k.id === created.id);
  t.equal(listed.revokedAt, res.json.revokedAt);
  // Revoking again keeps the first revocation time.
  t.equal((await cli(['keys', 'revoke', created.id])).json.revokedAt, res.json.revokedAt);
  assertRejected(t, await cli(['keys', 'revoke', 'abcdefghijklmnopqrst']), /no API key with id abcdefghijklmnopqrst/);
  assertRejected(t, await cli(['keys', 'revoke']), /KEY_ID is required/);
  t.equal((await server.get('/api/v1/projects', { key: alice.key })).status, 200, 'other keys of the user keep working');
});

t.test('roles set prints the organization user and applies to the next request', async (t) => {
  const carol = await server.member(org);
  const priv = await server.post('/api/v1/projects', { code: 'P', name: 'Private', description: 'd', visibility: 'PRIVATE' }, { key: alice.key });
  t.equal(priv.status, 201);
  t.equal((await server.get(`/api/v1/projects/${priv.body.id}`, { key: carol.key })).status, 404);

  const res = await cli(['roles', 'set', carol.organizationUserId, 'ORGANIZATION_ADMIN,ORGANIZATION_USER']);
  t.equal(res.code, 0, res.stderr);
  t.match(res.json, { id: carol.organizationUserId, organizationId: org, roles: ['ORGANIZATION_ADMIN', 'ORGANIZATION_USER'], status: 'ACTIVE', user: { id: carol.userId } });
  t.equal((await server.get(`/api/v1/projects/${priv.body.id}`, { key: carol.key })).status, 200, 'an admin views every project');

  const back = await cli(['roles', 'set', carol.organizationUserId, 'ORGANIZATION_USER']);
  t.same(back.json.roles, ['ORGANIZATION_USER']);
  t.equal((await server.get(`/api/v1/projects/${priv.body.id}`, { key: carol.key })).status, 404);
});

t.test('roles set refuses unknown roles and unknown organization users, changing nothing', async (t) => {
  assertRejected(t, await cli(['roles', 'set', bob.organizationUserId, 'ORGANIZATION_USER,SUPERUSER']), /unknown role "SUPERUSER"/);
  assertRejected(t, await cli(['roles', 'set', '00000000-0000-4000-8000-000000000000', 'ORGANIZATION_USER']), /no organization user with id 00000000-0000-4000-8000-000000000000/);
  assertRejected(t, await cli(['roles', 'set', bob.organizationUserId]), /usage: roles set/);
  const [row] = await server.sql<{ roles: string[] }>('select roles from organization_user where id = ?', [bob.organizationUserId]);
  t.same(row.roles, ['ORGANIZATION_USER']);
});

t.test('an unknown verb is a one-line error', async (t) => {
  assertRejected(t, await launched(['frobnicate']), /unknown verb "frobnicate"/);
  assertRejected(t, await launched(['keys', 'rotate']), /unknown keys action "rotate"/);
});

t.test('as a process: the JSON on stdout and exit 0; a refusal exits 2 with one line on stderr', async (t) => {
  const created = await launched(createArgs());
  t.equal(created.code, 0, created.stderr);
  t.match(created.json, { id: String, key: new RegExp(`^key_${created.json?.id}\\.`) });
  t.equal((await server.get('/api/v1/projects', { key: created.json.key })).status, 200);
  const listed = await launched(['keys', 'list', '--user', alice.userId]);
  t.ok(listed.json.some((k: { id: string }) => k.id === created.json.id), 'keys list prints JSON');
  const refused = await launched(['keys', 'revoke', 'abcdefghijklmnopqrst']);
  t.equal(refused.code, 2);
  assertRejected(t, refused, /no API key with id abcdefghijklmnopqrst/);
});
