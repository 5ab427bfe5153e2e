// Organization integrations (/integrations, tools list_integrations and get_integration) and
// personal integrations (/me/integrations), provisioned through the real CLI's bootstrap file.
// Credentials are sealed at rest and never appear in a response.
import t from 'tap';
import { createTestDatabase } from '../../support/db.ts';
import { startTestServer } from '../../support/server.ts';
import { connectMcp, callTool, expectToolMatchesRest } from '../../support/mcp.ts';
import { runCliInProcess, tempFile } from '../../cli/labdata-cli.ts';
import { findIntegration, findPersonalIntegration } from '../../../plugins/integrations/extensions.ts';
import { applyBootstrap } from '../../../app/cli/bootstrap.ts';

const PLUGINS = 'users,integrations,projects,studies,assay-types,assays,activity';
const databaseUrl = await createTestDatabase(t);
const cli = async (content: unknown) => runCliInProcess(['bootstrap', await tempFile(content)], { LABDATA_DATABASE_URL: databaseUrl, LABDATA_PLUGINS: PLUGINS });

const SECRET = 'tok-very-secret-8d1f2a';
const boot = await cli({
  organizations: [{ ref: 'acme', name: 'Acme' }, { ref: 'other', name: 'Other' }],
  users: [
    { ref: 'alice', email: 'alice@acme.test', memberships: [{ organization: 'acme', roles: ['ORGANIZATION_USER'] }] },
    { ref: 'bob', email: 'bob@acme.test', memberships: [{ organization: 'acme', roles: ['ORGANIZATION_USER'] }, { organization: 'other', roles: ['ORGANIZATION_USER'] }] },
    { ref: 'root', email: 'root@acme.test', memberships: [{ organization: 'acme', roles: ['ORGANIZATION_ADMIN'] }] },
    { ref: 'olga', email: 'olga@other.test', memberships: [{ organization: 'other', roles: ['ORGANIZATION_ADMIN'] }] },
  ],
  apiKeys: [
    { ref: 'alice', user: 'alice', organization: 'acme', name: 'k', days: 30 },
    { ref: 'bob', user: 'bob', organization: 'acme', name: 'k', days: 30 },
    { ref: 'bob@other', user: 'bob', organization: 'other', name: 'k', days: 30 },
    { ref: 'root', user: 'root', organization: 'acme', name: 'k', days: 30 },
    { ref: 'olga', user: 'olga', organization: 'other', name: 'k', days: 30 },
  ],
  integrations: [
    { ref: 'eln', organization: 'acme', type: 'ELN_A', name: 'Notebook A', settings: { baseUrl: 'http://127.0.0.1:9/eln' }, credentials: { token: SECRET } },
    { ref: 'elnb', organization: 'acme', type: 'ELN_B', name: 'Bench B', settings: { baseUrl: 'http://127.0.0.1:9/b' }, credentials: { apiKey: SECRET } },
    { ref: 'git', organization: 'acme', type: 'GIT', name: 'Code', settings: { provider: 'LOCAL', rootPath: '/tmp/x' } },
    { ref: 'other-eln', organization: 'other', type: 'ELN_A', name: 'Their notebook', settings: {}, credentials: { token: SECRET } },
  ],
  personalIntegrations: [
    { ref: 'alice-git', user: 'alice', organization: 'acme', type: 'GIT', name: "Alice's Git", settings: { baseUrl: 'https://git.test' }, credentials: { token: SECRET } },
    { ref: 'alice-eln', user: 'alice', organization: 'acme', type: 'ELN_B', name: "Alice's bench", credentials: { apiKey: SECRET } },
    { ref: 'bob-git', user: 'bob', organization: 'acme', type: 'GIT', name: "Bob's Git", credentials: { token: SECRET } },
    { ref: 'bob-other', user: 'bob', organization: 'other', type: 'GIT', name: "Bob's Git elsewhere", credentials: { token: SECRET } },
  ],
});
const server = await startTestServer(t, { databaseUrl, plugins: PLUGINS.split(',') });
const out = boot.json;
const key = (ref: string) => out.apiKeys[ref].key as string;
const ids = (section: string) => Object.fromEntries(Object.entries(out[section] as Record<string, { id: string }>).map(([k, v]) => [k, v.id]));
const integrations = ids('integrations');
const personal = ids('personalIntegrations');
const orgs = ids('organizations');

t.test('bootstrap creates integrations and personal integrations, printing their ids by ref', async (t) => {
  t.equal(boot.code, 0, boot.stderr);
  t.same(Object.keys(out.integrations).sort(), ['eln', 'elnb', 'git', 'other-eln']);
  t.same(Object.keys(out.personalIntegrations).sort(), ['alice-eln', 'alice-git', 'bob-git', 'bob-other']);
});

t.test('credentials are encrypted at rest: the plain secret is nowhere in the tables', async (t) => {
  const rows = await server.sql<{ credentials: string | null }>('select credentials from integration union all select credentials from personal_integration');
  t.ok(rows.length >= 8);
  for (const r of rows) {
    if (r.credentials === null) continue;
    t.notMatch(r.credentials, SECRET);
    t.match(r.credentials, /^v1\.[\w-]+\.[\w-]+\.[\w-]+$/, 'an AES-GCM envelope');
  }
  const dump = await server.sql<{ t: string }>(
    `select string_agg(x::text, ' ') as t from (select row_to_json(i)::text as x from integration i union all select row_to_json(p)::text from personal_integration p) s`,
  );
  t.notMatch(dump[0].t, SECRET);
});

t.test('GET /integrations lists the organization integrations with settings, never credentials', async (t) => {
  const res = await server.get('/api/v1/integrations', { key: key('alice') });
  t.equal(res.status, 200);
  t.notMatch(res.text, SECRET);
  t.equal(res.body.totalElements, 3, "only the caller's organization");
  t.same(res.body.content.map((i: { name: string }) => i.name), ['Bench B', 'Code', 'Notebook A'], 'sorted by name');
  const eln = res.body.content.find((i: { id: string }) => i.id === integrations.eln);
  t.same(eln, {
    id: integrations.eln,
    organizationId: orgs.acme,
    type: 'ELN_A',
    name: 'Notebook A',
    settings: { baseUrl: 'http://127.0.0.1:9/eln' },
    hasCredentials: true,
    createdAt: eln.createdAt,
    updatedAt: eln.updatedAt,
  });
  t.notOk('credentials' in eln);
  const git = res.body.content.find((i: { id: string }) => i.id === integrations.git);
  t.equal(git.hasCredentials, false);
  const sorted = await server.get('/api/v1/integrations?sort=type,desc&size=1', { key: key('alice') });
  t.same(sorted.body.content.map((i: { type: string }) => i.type), ['GIT']);
  t.equal(sorted.body.totalPages, 3);
});

t.test('GET /integrations/{id}: members and admins of the organization; others get 404', async (t) => {
  for (const who of ['alice', 'root']) {
    const res = await server.get(`/api/v1/integrations/${integrations.eln}`, { key: key(who) });
    t.equal(res.status, 200, who);
    t.equal(res.body.type, 'ELN_A');
    t.notMatch(res.text, SECRET);
  }
  const foreign = await server.get(`/api/v1/integrations/${integrations['other-eln']}`, { key: key('alice') });
  t.equal(foreign.status, 404, "another organization's integration");
  t.match(foreign.body.details ?? foreign.body.message, new RegExp(`Integration.*${integrations['other-eln']}`));
  t.equal((await server.get(`/api/v1/integrations/${integrations.eln}`, { key: key('olga') })).status, 404, 'an admin of another organization');
  t.equal((await server.get(`/api/v1/integrations/${integrations.eln}`)).status, 401, 'no key');
  t.equal((await server.get('/api/v1/integrations/not-a-uuid', { key: key('alice') })).status, 400);
});

t.test('organization integrations cannot be modified through the API', async (t) => {
  for (const [method, path] of [['POST', '/integrations'], ['PUT', `/integrations/${integrations.eln}`], ['DELETE', `/integrations/${integrations.eln}`]]) {
    const res = await server.request(method, '/api/v1' + path, { key: key('root'), body: method === 'DELETE' ? undefined : { name: 'x' } });
    t.ok([404, 405].includes(res.status), `${method} ${path} is not an operation (${res.status})`);
  }
});

t.test('tools list_integrations and get_integration equal the REST GETs', async (t) => {
  const client = await connectMcp(server.url, { key: key('alice'), teardown: (fn) => t.teardown(fn) });
  await expectToolMatchesRest(t, server, client, key('alice'), 'list_integrations', {}, '/integrations');
  await expectToolMatchesRest(t, server, client, key('alice'), 'list_integrations', { page: 1, size: 2 }, '/integrations?page=1&size=2');
  await expectToolMatchesRest(t, server, client, key('alice'), 'get_integration', { id: integrations.elnb }, `/integrations/${integrations.elnb}`);
  const foreign = await callTool(client, 'get_integration', { id: integrations['other-eln'] });
  t.equal(foreign.isError, true, "another organization's integration is an error result");
  const names = (await client.listTools()).tools.map((tool) => tool.name);
  t.ok(names.includes('list_integrations') && names.includes('get_integration'));
  t.notOk(names.some((n) => n.includes('my_integration')), 'personal integrations are REST only');
});

t.test("GET /me/integrations: the caller's active connections in the key's organization only", async (t) => {
  const res = await server.get('/api/v1/me/integrations', { key: key('alice') });
  t.equal(res.status, 200);
  t.notMatch(res.text, SECRET);
  t.same(res.body.content.map((i: { id: string }) => i.id).sort(), [personal['alice-eln'], personal['alice-git']].sort());
  const git = res.body.content.find((i: { id: string }) => i.id === personal['alice-git']);
  t.match(git, { userId: out.users.alice.id, organizationId: orgs.acme, type: 'GIT', name: "Alice's Git", status: 'ACTIVE', hasCredentials: true, settings: { baseUrl: 'https://git.test' } });
  const bob = await server.get('/api/v1/me/integrations', { key: key('bob') });
  t.same(bob.body.content.map((i: { id: string }) => i.id), [personal['bob-git']], "bob's acme key sees his acme connection");
  const bobOther = await server.get('/api/v1/me/integrations', { key: key('bob@other') });
  t.same(bobOther.body.content.map((i: { id: string }) => i.id), [personal['bob-other']], 'and his other key the other one');
  t.equal((await server.get('/api/v1/me/integrations', { key: key('root') })).body.totalElements, 0, 'an admin sees only their own');
});

t.test("GET /me/integrations/{id}: another user's id is a 404, even for an admin", async (t) => {
  const mine = await server.get(`/api/v1/me/integrations/${personal['alice-git']}`, { key: key('alice') });
  t.equal(mine.status, 200);
  t.equal(mine.body.id, personal['alice-git']);
  t.notMatch(mine.text, SECRET);
  t.equal((await server.get(`/api/v1/me/integrations/${personal['alice-git']}`, { key: key('bob') })).status, 404);
  t.equal((await server.get(`/api/v1/me/integrations/${personal['alice-git']}`, { key: key('root') })).status, 404);
  t.equal((await server.get(`/api/v1/me/integrations/${personal['alice-git']}`, { key: key('olga') })).status, 404);
  t.equal((await server.get(`/api/v1/me/integrations/${personal['bob-other']}`, { key: key('bob') })).status, 404, "the same user's connection in another organization");
});

t.test('DELETE /me/integrations/{id} archives it, deletes its credentials, records ADMINISTRATIVE activity', async (t) => {
  // Another user's id: 404, nothing changes.
  const forbidden = await server.delete(`/api/v1/me/integrations/${personal['alice-eln']}`, { key: key('bob') });
  t.equal(forbidden.status, 404);
  t.equal((await server.delete(`/api/v1/me/integrations/${personal['alice-eln']}`, { key: key('root') })).status, 404, 'not even an admin');
  const [before] = await server.sql<{ status: string; credentials: string | null }>('select status, credentials from personal_integration where id = ?', [personal['alice-eln']]);
  t.equal(before.status, 'ACTIVE');
  t.ok(before.credentials);

  const res = await server.delete(`/api/v1/me/integrations/${personal['alice-eln']}`, { key: key('alice') });
  t.equal(res.status, 204);
  t.equal(res.text, '');
  const [row] = await server.sql<{ status: string; credentials: string | null; archived_at: Date | null }>(
    'select status, credentials, archived_at from personal_integration where id = ?', [personal['alice-eln']]);
  t.equal(row.status, 'ARCHIVED');
  t.equal(row.credentials, null, 'the stored credentials are deleted');
  t.ok(row.archived_at);
  const [activity] = await server.sql<{ event_type: string; category: string; data: Record<string, unknown>; organization_user_id: string; project_id: string | null }>(
    `select event_type, category, data, organization_user_id, project_id from activity where event_type = 'personal_integration.disconnected'`);
  t.same(activity, {
    event_type: 'personal_integration.disconnected',
    category: 'ADMINISTRATIVE',
    data: { integrationId: personal['alice-eln'], type: 'ELN_B', name: "Alice's bench" },
    organization_user_id: out.users.alice.organizationUsers.acme,
    project_id: null,
  });
  const list = await server.get('/api/v1/me/integrations', { key: key('alice') });
  t.same(list.body.content.map((i: { id: string }) => i.id), [personal['alice-git']], 'archived connections are not listed');
  t.equal((await server.get(`/api/v1/me/integrations/${personal['alice-eln']}`, { key: key('alice') })).status, 404);
  t.equal((await server.delete(`/api/v1/me/integrations/${personal['alice-eln']}`, { key: key('alice') })).status, 404, 'a second delete');
  const feed = await server.get('/api/v1/activity?category=ADMINISTRATIVE', { key: key('alice') });
  t.ok(feed.body.content.some((a: { eventType: string }) => a.eventType === 'personal_integration.disconnected'), 'in the caller\'s activity feed');
});

t.test('DELETE /me/integrations/{id} sent several times at once: one 204, the others 404, one activity entry', async (t) => {
  for (let i = 0; i < 3; i++) {
    const made = await applyBootstrap(server.orm.em.fork(), {
      personalIntegrations: [{ ref: 'race', user: out.users.alice.id, organization: orgs.acme, type: 'GIT', name: `Race ${i}`, credentials: { token: SECRET } }],
    }, server.kernel);
    const id = (made as Record<string, Record<string, { id: string }>>).personalIntegrations.race.id;
    const res = await Promise.all([1, 2, 3].map(() => server.delete(`/api/v1/me/integrations/${id}`, { key: key('alice') })));
    t.same(res.map((r) => r.status).sort(), [204, 404, 404]);
    const entries = await server.sql(`select id from activity where event_type = 'personal_integration.disconnected' and data->>'integrationId' = ?`, [id]);
    t.equal(entries.length, 1, 'one disconnection, one entry');
  }
});

/** The error a promise rejects with (undefined when it resolves). */
const rejection = (p: Promise<unknown>) => p.then(() => undefined, (err: unknown) => err);

t.test('findIntegration opens the credentials for other plugins; unknown is 404, another type 400', async (t) => {
  const em = server.orm.em.fork();
  const secrets = server.kernel.services.secrets;
  const eln = await findIntegration(em, orgs.acme, integrations.eln, 'ELN_A', { secrets });
  t.same(eln.credentials, { token: SECRET });
  t.same(eln.settings, { baseUrl: 'http://127.0.0.1:9/eln' });
  t.equal((await findIntegration(em, orgs.acme, integrations.git, 'GIT', { secrets })).credentials, null);
  t.match(await rejection(findIntegration(em, orgs.acme, integrations['other-eln'], 'ELN_A', { secrets })), { statusCode: 404 });
  t.match(await rejection(findIntegration(em, orgs.acme, integrations.eln, 'GIT', { secrets })), { statusCode: 400, message: /ELN_A, not GIT/ });
  t.match(await rejection(findIntegration(em, orgs.acme, integrations.eln, 'GIT', { secrets, field: 'defaultGitGroup.integrationId' })), {
    statusCode: 400,
    errors: [{ field: 'defaultGitGroup.integrationId' }],
  });
  const mine = await findPersonalIntegration(em, { organizationId: orgs.acme, userId: out.users.alice.id }, personal['alice-git'], 'GIT', { secrets });
  t.same(mine.credentials, { token: SECRET });
  t.match(await rejection(findPersonalIntegration(em, { organizationId: orgs.acme, userId: out.users.bob.id }, personal['alice-git'], 'GIT', { secrets })), { statusCode: 404 });
});

t.test('bad bootstrap items are refused with one line naming the item; nothing is created', async (t) => {
  const base = { organizations: [{ ref: 'x', name: 'X' }] };
  const cases: [unknown, RegExp][] = [
    [{ ...base, integrations: [{ ref: 'bad', organization: 'x', type: 'JIRA', name: 'J' }] }, /integrations "bad".*type/],
    [{ ...base, integrations: [{ ref: 'twice', organization: 'x', type: 'GIT', name: 'G', settings: { token: 'oops' }, credentials: { token: 'oops' } }] }, /integrations "twice": settings\.token is also in credentials/],
    [{ ...base, integrations: [{ ref: 'meta', organization: 'x', type: 'ELN_A', name: 'E', settings: { baseUrl: 'https://169.254.169.254/oops' } }] }, /integrations "meta": settings\.baseUrl must not be a link-local or cloud metadata address \(set LABDATA_VENDOR_ALLOW_LINK_LOCAL=true/],
    [{ ...base, personalIntegrations: [{ ref: 'p', user: 'ghost', organization: 'x', type: 'GIT', name: 'G', credentials: {} }] }, /personalIntegrations "p"/],
    [{ ...base, personalIntegrations: [{ ref: 'p2', user: out.users.olga.id, organization: orgs.acme, type: 'GIT', name: 'G', credentials: {} }] }, /personalIntegrations "p2"/],
    [{ ...base, personalIntegrations: [{ ref: 'p3', user: out.users.alice.id, organization: orgs.acme, type: 'GIT', name: 'G' }] }, /personalIntegrations "p3".*credentials/],
  ];
  const count = async () => (await server.sql<{ n: number }>('select (select count(*) from integration) + (select count(*) from personal_integration) as n'))[0].n;
  const before = await count();
  for (const [file, reason] of cases) {
    const res = await cli(file);
    t.not(res.code, 0, String(reason));
    t.equal(res.reasons.length, 1);
    t.match(res.reasons[0], reason);
    t.notMatch(res.stderr, 'oops', 'a refused secret is not echoed');
  }
  t.equal(await count(), before);
});

t.test('settings: only the public fields its type declares are shown; every other field is a sealed secret', async (t) => {
  const secrets = { pass: 'pass-value-1f', bearer: 'bearer-value-2e', authorization: 'Basic auth-value-3d', frobnicate: 'unknown-value-4c' };
  const res = await cli({
    integrations: [
      { ref: 'hidden', organization: orgs.acme, type: 'ELN_A', name: 'Hidden', settings: { baseUrl: 'https://eln.example.org', timeoutMs: 1000, ...secrets }, credentials: { token: SECRET } },
      { ref: 'bare', organization: orgs.acme, type: 'GIT', name: 'Bare', settings: { provider: 'HTTP', baseUrl: 'https://git.example.org', ...secrets } },
    ],
    personalIntegrations: [
      { ref: 'mine', user: out.users.alice.id, organization: orgs.acme, type: 'ELN_B', name: 'Mine', settings: { baseUrl: 'https://b.example.org', ...secrets }, credentials: { apiKey: SECRET } },
    ],
  });
  t.equal(res.code, 0, res.stderr);
  for (const value of Object.values(secrets)) {
    t.notMatch(res.stdout + res.stderr, value, 'not in the CLI output or logs');
  }
  const { hidden, bare } = res.json.integrations;
  const shown = await server.get(`/api/v1/integrations/${hidden.id}`, { key: key('alice') });
  t.same(shown.body.settings, { baseUrl: 'https://eln.example.org', timeoutMs: 1000 });
  const bareShown = await server.get(`/api/v1/integrations/${bare.id}`, { key: key('alice') });
  t.same(bareShown.body.settings, { provider: 'HTTP', baseUrl: 'https://git.example.org' });
  t.equal(bareShown.body.hasCredentials, true, 'the undeclared fields are its credentials');
  const mine = await server.get(`/api/v1/me/integrations/${res.json.personalIntegrations.mine.id}`, { key: key('alice') });
  t.same(mine.body.settings, { baseUrl: 'https://b.example.org' });
  for (const r of [shown, bareShown, mine, await server.get('/api/v1/integrations', { key: key('root') })]) {
    for (const value of Object.values(secrets)) t.notMatch(r.text, value);
  }
  const dump = await server.sql<{ t: string }>(
    `select string_agg(x, ' ') as t from (select row_to_json(i)::text as x from integration i union all select row_to_json(p)::text from personal_integration p) s`,
  );
  for (const value of Object.values(secrets)) t.notMatch(dump[0].t, value, 'nothing in plain text at rest');
  const em = server.orm.em.fork();
  const opened = await findIntegration(em, orgs.acme, hidden.id, 'ELN_A', { secrets: server.kernel.services.secrets });
  t.same(opened.credentials, { token: SECRET, ...secrets }, 'connectors get them with the credentials');
  t.same(opened.settings, { baseUrl: 'https://eln.example.org', timeoutMs: 1000 });
  const openedMine = await findPersonalIntegration(em, { organizationId: orgs.acme, userId: out.users.alice.id }, res.json.personalIntegrations.mine.id, 'ELN_B', { secrets: server.kernel.services.secrets });
  t.same(openedMine.credentials, { apiKey: SECRET, ...secrets });
});

t.test('a row stored before the allow-list shows only its public settings', async (t) => {
  await server.sql(`update integration set settings = settings || '{"password": "legacy-plain-5b"}'::jsonb where id = ?`, [integrations.eln]);
  const res = await server.get(`/api/v1/integrations/${integrations.eln}`, { key: key('alice') });
  t.same(res.body.settings, { baseUrl: 'http://127.0.0.1:9/eln' });
  t.notMatch(res.text, 'legacy-plain-5b');
});

t.test('LABDATA_VENDOR_ALLOW_LINK_LOCAL=true lets a vendor URL name a link-local address', async (t) => {
  const file = await tempFile({ integrations: [{ ref: 'imds', organization: orgs.acme, type: 'ELN_A', name: 'Link-local ELN', settings: { baseUrl: 'https://169.254.10.20/eln' } }] });
  const res = await runCliInProcess(['bootstrap', file], { LABDATA_DATABASE_URL: databaseUrl, LABDATA_PLUGINS: PLUGINS, LABDATA_VENDOR_ALLOW_LINK_LOCAL: 'true' });
  t.equal(res.code, 0, res.stderr);
  t.ok(res.json.integrations.imds.id);
});

t.test('vendor URLs and Git roots are checked where they are stored, naming the field (in process)', async (t) => {
  const cases: [unknown, RegExp][] = [
    [{ integrations: [{ ref: 'file', organization: orgs.acme, type: 'ELN_B', name: 'E', settings: { baseUrl: 'file:///etc/oops' } }] }, /integrations "file": settings\.baseUrl must be an https URL, not file/],
    [{ integrations: [{ ref: 'gopher', organization: orgs.acme, type: 'GIT', name: 'G', settings: { provider: 'HTTP', baseUrl: 'gopher://127.0.0.1:70/oops' } }] }, /integrations "gopher": settings\.baseUrl must be an https URL, not gopher/],
    [{ integrations: [{ ref: 'plain', organization: orgs.acme, type: 'ELN_A', name: 'E', settings: { baseUrl: 'http://eln.example.org/oops' } }] }, /integrations "plain": settings\.baseUrl must be an https URL \(plain http is allowed to a loopback address only\)/],
    [{ integrations: [{ ref: 'root', organization: orgs.acme, type: 'GIT', name: 'G', settings: { provider: 'LOCAL', rootPath: '/' } }] }, /integrations "root": settings\.rootPath must not be the filesystem root/],
    [{ personalIntegrations: [{ ref: 'etc', user: out.users.alice.id, organization: orgs.acme, type: 'GIT', name: 'G', settings: { provider: 'LOCAL', rootPath: '/etc/oops' }, credentials: {} }] }, /personalIntegrations "etc": settings\.rootPath must not be in the system directory \/etc/],
  ];
  const count = async () => (await server.sql<{ n: number }>('select (select count(*) from integration) + (select count(*) from personal_integration) as n'))[0].n;
  const before = await count();
  for (const [file, reason] of cases) {
    const error = await rejection(applyBootstrap(server.orm.em.fork(), file, server.kernel));
    t.match(error, { message: reason });
    t.notMatch((error as Error).message, 'oops', 'the value is not echoed');
  }
  t.equal(await count(), before);
});
