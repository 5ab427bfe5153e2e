import t from 'tap';

import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createTestDatabase } from '../support/db.ts';
import { startTestServer } from '../support/server.ts';
import { projectRoot, runCli, runCliInProcess, tempFile, type CliResult } from './labdata-cli.ts';
import { loadDeploymentPlugins as loadPlugins } from '../../app/plugins.ts';

type Root = typeof t; // `t` is shadowed by the parameters below
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const exampleFile = join(projectRoot, 'test/fixtures/bootstrap/acme.json');

// The CLI migrates an empty database itself; the server is started on it afterwards, as an
// operator would provision first and serve later (or while it runs: the CLI works either way).
const databaseUrl = await createTestDatabase(t);
// The first run is the real launcher; the later ones run the CLI's code in this process.
const first = await runCli(['bootstrap', exampleFile], { LABDATA_DATABASE_URL: databaseUrl, LABDATA_LOG_LEVEL: 'info' });
const cli = (args: string[], env: Record<string, string> = {}) => runCliInProcess(args, { LABDATA_DATABASE_URL: databaseUrl, ...env });
const server = await startTestServer(t, { databaseUrl });
const out = first.json;

const TABLES = ['organization', 'app_user', 'organization_user', 'team', 'team_member', 'api_key', 'activity'];
async function counts(): Promise<Record<string, number>> {
  const result: Record<string, number> = {};
  for (const table of TABLES) result[table] = Number((await server.sql<{ n: string }>(`select count(*) as n from ${table}`))[0].n);
  return result;
}

/** A failed run: non-zero, nothing on stdout, exactly one reason line matching `reason`. */
function assertRejected(t: Pick<Root, 'not' | 'equal' | 'match'>, res: CliResult, reason: RegExp) {
  t.not(res.code, 0, 'exits non-zero');
  t.equal(res.stdout, '', 'prints nothing on stdout');
  t.equal(res.reasons.length, 1, 'one reason line');
  t.match(res.reasons[0], reason);
}

t.test('bootstrap prints the created ids and key secrets by ref, as JSON on stdout only', async (t) => {
  t.equal(first.code, 0, first.stderr);
  t.same(Object.keys(out).sort(), ['apiKeys', 'organizations', 'teams', 'users']);
  t.match(out.organizations.acme.id, UUID);
  t.match(out.organizations.globex.id, UUID);
  t.match(out.users.alice.id, UUID);
  t.same(Object.keys(out.users.alice.organizationUsers).sort(), ['acme', 'globex']);
  t.match(out.users.alice.organizationUsers.acme, UUID);
  t.match(out.users.bob.organizationUsers.acme, UUID);
  t.match(out.teams.bio.id, UUID);
  for (const ref of ['alice@acme', 'alice@globex', 'alice-expired']) {
    const key = out.apiKeys[ref];
    t.same(Object.keys(key).sort(), ['id', 'key'], ref);
    t.match(key.key, new RegExp(`^key_${key.id}\\.[A-Za-z0-9_-]{43}$`), ref);
  }
  // Logs went to stderr (migrations were applied on this empty database), never to stdout.
  t.match(first.stderr, /migrations applied/);
  t.equal(first.reasons.length, 0);
});

t.test('the bootstrapped records are stored as the file says', async (t) => {
  const ous = await server.sql<{ id: string; organization_id: string; user_id: string; roles: string[]; status: string }>(
    'select id, organization_id, user_id, roles, status from organization_user order by status');
  t.same(ous.map((o) => [o.id, o.organization_id, o.user_id, o.roles, o.status]).sort(), [
    [out.users.alice.organizationUsers.acme, out.organizations.acme.id, out.users.alice.id, ['ORGANIZATION_ADMIN'], 'ACTIVE'],
    [out.users.alice.organizationUsers.globex, out.organizations.globex.id, out.users.alice.id, ['ORGANIZATION_USER'], 'ACTIVE'],
    [out.users.bob.organizationUsers.acme, out.organizations.acme.id, out.users.bob.id, ['ORGANIZATION_USER'], 'INVITED'],
  ].sort());
  const [team] = await server.sql<{ organization_id: string; name: string }>('select organization_id, name from team where id = ?', [out.teams.bio.id]);
  t.same(team, { organization_id: out.organizations.acme.id, name: 'Biology' });
  const members = await server.sql<{ organization_user_id: string }>('select organization_user_id from team_member where team_id = ?', [out.teams.bio.id]);
  t.same(members.map((m) => m.organization_user_id).sort(), [out.users.alice.organizationUsers.acme, out.users.bob.organizationUsers.acme].sort());
  const [names] = await server.sql<{ email: string; display_name: string }>('select email, display_name from app_user where id = ?', [out.users.alice.id]);
  t.same(names, { email: 'alice@acme.test', display_name: 'Alice' });
});

t.test('a bootstrapped key works against the server, in its own organization', async (t) => {
  const acme = out.apiKeys['alice@acme'].key;
  t.equal((await server.get('/api/v1/projects', { key: acme })).status, 200);
  const me = await server.get(`/api/v1/organization-users/${out.users.alice.organizationUsers.acme}`, { key: acme });
  t.equal(me.status, 200);
  t.match(me.body, { organizationId: out.organizations.acme.id, roles: ['ORGANIZATION_ADMIN'], status: 'ACTIVE', user: { id: out.users.alice.id, email: 'alice@acme.test' } });
  // The globex key acts in globex: acme's organization users are not visible through it.
  const globex = out.apiKeys['alice@globex'].key;
  t.equal((await server.get(`/api/v1/organization-users/${out.users.alice.organizationUsers.globex}`, { key: globex })).status, 200);
  t.equal((await server.get(`/api/v1/organization-users/${out.users.alice.organizationUsers.acme}`, { key: globex })).status, 404);
});

t.test('a key bootstrapped with a past expiresAt exists but gets 401', async (t) => {
  const expired = out.apiKeys['alice-expired'];
  const [row] = await server.sql<{ expires_at: string }>('select expires_at from api_key where id = ?', [expired.id]);
  t.equal(new Date(row.expires_at).toISOString(), '2020-01-01T00:00:00.000Z');
  t.equal((await server.get('/api/v1/projects', { key: expired.key })).status, 401);
});

t.test('a second file adds to what exists, pointing at existing records by id', async (t) => {
  const before = await counts();
  const file = await tempFile({
    users: [{ ref: 'carol', email: 'carol@acme.test', displayName: 'Carol', memberships: [{ organization: out.organizations.acme.id, roles: ['ORGANIZATION_USER'] }] }],
    teams: [{ ref: 'chem', organization: out.organizations.acme.id, name: 'Chemistry', members: [out.users.alice.id, 'carol'] }],
    apiKeys: [{ ref: 'carol', user: 'carol', organization: out.organizations.acme.id, name: 'laptop', days: 90 }],
  });
  const res = await cli(['bootstrap', file]);
  t.equal(res.code, 0, res.stderr);
  const carolOu = res.json.users.carol.organizationUsers[out.organizations.acme.id];
  t.match(carolOu, UUID, 'organizationUsers is keyed by the organization as the file named it');
  t.same(await counts(), { ...before, app_user: before.app_user + 1, organization_user: before.organization_user + 1, team: before.team + 1, team_member: before.team_member + 2, api_key: before.api_key + 1 });
  const members = await server.sql<{ organization_user_id: string }>('select organization_user_id from team_member where team_id = ?', [res.json.teams.chem.id]);
  t.same(members.map((m) => m.organization_user_id).sort(), [out.users.alice.organizationUsers.acme, carolOu].sort());
  // Carol's key sees the existing organization's users (defaults: ORGANIZATION_USER, ACTIVE).
  const list = await server.get('/api/v1/organization-users?size=100', { key: res.json.apiKeys.carol.key });
  t.equal(list.status, 200);
  t.same(list.body.content.map((o: { id: string }) => o.id).sort(), [out.users.alice.organizationUsers.acme, out.users.bob.organizationUsers.acme, carolOu].sort());
  t.match(list.body.content.find((o: { id: string }) => o.id === carolOu), { roles: ['ORGANIZATION_USER'], status: 'ACTIVE' });
  // Empty lists of sections not supported yet are accepted.
  const empty = await cli(['bootstrap', await tempFile({ notes: [], assayTypes: [] })]);
  t.equal(empty.code, 0, empty.stderr);
  t.same(empty.json, {});
});

t.test('bad input changes nothing and exits non-zero with one line naming the item', async (t) => {
  const org = { ref: 'initech', name: 'Initech' };
  const user = (extra: Record<string, unknown> = {}) => ({ ref: 'dave', email: 'dave@initech.test', memberships: [{ organization: 'initech', roles: ['ORGANIZATION_USER'] }], ...extra });
  const cases: [string, unknown, RegExp][] = [
    ['unknown organization ref', { organizations: [org], users: [user({ memberships: [{ organization: 'nope', roles: ['ORGANIZATION_USER'] }] })] }, /users "dave".*unknown organization "nope"/],
    ['unknown organization id', { organizations: [org], users: [user({ memberships: [{ organization: '00000000-0000-4000-8000-000000000000' }] })] }, /users "dave".*unknown organization "00000000-0000-4000-8000-000000000000"/],
    ['unknown user ref in a team', { organizations: [org], users: [user()], teams: [{ ref: 't', organization: 'initech', name: 'T', members: ['erin'] }] }, /teams "t".*unknown user "erin"/],
    ['unknown user ref in a key', { organizations: [org], users: [user()], apiKeys: [{ ref: 'k', user: 'erin', organization: 'initech', name: 'k', days: 7 }] }, /apiKeys "k".*unknown user "erin"/],
    ['unknown role', { organizations: [org], users: [user({ memberships: [{ organization: 'initech', roles: ['SUPERUSER'] }] })] }, /users "dave".*unknown role "SUPERUSER"/],
    ['duplicate email in the file', { organizations: [org], users: [user(), user({ ref: 'dave2', email: 'DAVE@initech.test' })] }, /users "dave2".*duplicate email/i],
    ['email already in the database', { organizations: [org], users: [user({ email: 'Alice@Acme.test' })] }, /users "dave".*already exists/],
    ['key validity not allowed', { organizations: [org], users: [user()], apiKeys: [{ ref: 'k', user: 'dave', organization: 'initech', name: 'k', days: 5 }] }, /apiKeys "k".*days must be one of 7, 30, 90, 365/],
    ['key validity as text', { organizations: [org], users: [user()], apiKeys: [{ ref: 'k', user: 'dave', organization: 'initech', name: 'k', days: '30' }] }, /apiKeys "k".*days must be one of 7, 30, 90, 365/],
    ['both days and expiresAt', { organizations: [org], users: [user()], apiKeys: [{ ref: 'k', user: 'dave', organization: 'initech', name: 'k', days: 7, expiresAt: '2031-01-01T00:00:00Z' }] }, /apiKeys "k".*either days or expiresAt, not both/],
    ...[true, 12345, '1', 'March 7, 2031', '2031-02-30T00:00:00Z', '2031-03-07T24:00:00Z', null].map((expiresAt): [string, unknown, RegExp] => [
      `expiresAt ${JSON.stringify(expiresAt)}`,
      { organizations: [org], users: [user()], apiKeys: [{ ref: 'k', user: 'dave', organization: 'initech', name: 'k', expiresAt }] },
      /apiKeys "k".*expiresAt .* is not an ISO date-time/,
    ]),
    ['key for a non-member', { organizations: [org, { ref: 'other', name: 'Other' }], users: [user()], apiKeys: [{ ref: 'k', user: 'dave', organization: 'other', name: 'k', days: 7 }] }, /apiKeys "k".*not a member/],
    ['key name too long', { organizations: [org], users: [user()], apiKeys: [{ ref: 'k', user: 'dave', organization: 'initech', name: 'x'.repeat(65), days: 7 }] }, /apiKeys "k".*at most 64/],
    ['membership not an object', { organizations: [org], users: [user({ memberships: ['initech'] })] }, /users "dave": memberships\[0\] must be an object/],
    ['unknown status', { organizations: [org], users: [user({ memberships: [{ organization: 'initech', status: 'GONE' }] })] }, /users "dave".*unknown status "GONE"/],
    ['unknown section', { organizations: [org], widgets: [{}] }, /unknown section "widgets"/],
    ['a key without a ref (its secret could never be shown)', { organizations: [org], users: [user()], apiKeys: [{ user: 'dave', organization: 'initech', name: 'k', days: 7 }] }, /apiKeys\[0\]: ref is required/],
    ['an unknown field in an item', { organizations: [{ ...org, bogus: 1 }] }, /organizations "initech": unknown field "bogus"/],
    ['an unknown field in a membership', { organizations: [org], users: [user({ memberships: [{ organization: 'initech', role: 'X' }] })] }, /users "dave": memberships\[0\]: unknown field "role"/],
  ];
  for (const [name, content, reason] of cases) {
    const before = await counts();
    assertRejected(t, await cli(['bootstrap', await tempFile(content)]), reason);
    t.same(await counts(), before, `${name}: database unchanged`);
  }
});

t.test('malformed JSON and a missing file are one-line errors naming the file', async (t) => {
  const before = await counts();
  const broken = await tempFile('{"organizations": [{"ref": "x", "name": "X"}');
  assertRejected(t, await cli(['bootstrap', broken]), new RegExp(`${broken.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}.*JSON`));
  assertRejected(t, await cli(['bootstrap', '/nonexistent/bootstrap.json']), /\/nonexistent\/bootstrap\.json.*(ENOENT|no such file)/);
  assertRejected(t, await cli(['bootstrap']), /FILE is required/);
  t.same(await counts(), before);
});

t.test('sections whose plugins do not exist yet are refused when non-empty', async (t) => {
  const example = JSON.parse(await readFile(join(projectRoot, 'test/fixtures/bootstrap/acme.json'), 'utf8'));
  // Sections some built-in plugin provides are tested with that plugin; the rest must be refused.
  const provided = new Set((await loadPlugins(undefined)).flatMap((p) => Object.keys(p.bootstrap ?? {})));
  const contractSections: Record<string, unknown> = {
    assayTypes: { ref: 'elisa', organization: 'acme', name: 'ELISA', status: 'ACTIVE', fields: [], tasks: [] },
    storageDrives: { ref: 'nas', organization: 'acme', name: 'Lab NAS', kind: 'LOCAL', rootPath: '/srv/lab-nas' },
    integrations: { ref: 'eln', organization: 'acme', type: 'ELN_A', name: 'Notebook', settings: {} },
    personalIntegrations: { ref: 'alice-git', user: 'alice', organization: 'acme', type: 'GIT', name: "Alice's Git", credentials: {} },
    notes: { ref: 'n1', parent: { organization: 'acme' }, type: 'NOTE', format: 'MARKDOWN', content: 'hello', archived: false },
  };
  const sections = Object.fromEntries(Object.entries(contractSections).filter(([name]) => !provided.has(name)));
  const before = await counts();
  for (const [section, item] of Object.entries(sections)) {
    const content = { organizations: [{ ref: 'acme', name: 'Acme 2' }], users: [{ ...example.users[0], email: 'new@acme.test' }], [section]: [item] };
    assertRejected(t, await cli(['bootstrap', await tempFile(content)]), new RegExp(`${section}.*not supported yet`));
  }
  t.same(await counts(), before);
});

t.test('with LABDATA_ENTERPRISE=false a file with keys is refused and changes nothing', async (t) => {
  const before = await counts();
  const content = { organizations: [{ ref: 'x', name: 'X' }], users: [{ ref: 'u', email: 'u@x.test', memberships: [{ organization: 'x' }] }], apiKeys: [{ ref: 'k', user: 'u', organization: 'x', name: 'k', days: 7 }] };
  assertRejected(t, await cli(['bootstrap', await tempFile(content)], { LABDATA_ENTERPRISE: 'false' }), /apiKeys "k".*no API key can be created/);
  t.same(await counts(), before);
});

t.test('a user another process creates between the check and the insert: exit 2 with a reason, nothing written', async (t) => {
  // Concurrent runs of one file (an orchestrator retrying): the loser's unique violation is the
  // "already exists" its own check would have given a moment later, not an unexpected error.
  const content = { organizations: [{ ref: 'race', name: 'Race Org' }], users: [{ ref: 'r', email: 'race@acme.test', memberships: [{ organization: 'race' }] }] };
  const file = await tempFile(content);
  const before = await counts();
  let run!: Promise<CliResult>;
  let settled = false;
  // The other process's user is inserted, not yet committed: the bootstrap's check misses it,
  // its insert waits on the unique index, and fails once the other commits.
  await server.orm.em.fork().transactional(async (tx) => {
    await tx.execute(`insert into app_user (id, email, display_name) values (gen_random_uuid(), 'race@acme.test', 'Other')`);
    run = cli(['bootstrap', file]).finally(() => (settled = true));
    const waiting = `select 1 from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`;
    await server.waitFor(async () => settled || (await server.sql(waiting)).length > 0, 30_000, 'the bootstrap to wait on the unique index');
  });
  const res = await run;
  t.equal(res.code, 2, 'bad input, as the check says it');
  t.equal(res.stdout, '');
  t.match(res.reasons, [/created at the same moment by another process; nothing was changed/]);
  t.notMatch(res.stderr, /unexpected error/);
  t.same(await counts(), { ...before, app_user: before.app_user + 1 }, 'only the other process\'s user');
});
