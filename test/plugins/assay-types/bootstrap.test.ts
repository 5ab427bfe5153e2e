import t from 'tap';
import { createTestDatabase } from '../../support/db.ts';
import { startTestServer } from '../../support/server.ts';
import { runCliInProcess, tempFile } from '../../cli/labdata-cli.ts';

// The contract's bootstrap file, `assayTypes` section: provisioned by the assay-types plugin,
// through the real CLI, in the file's single transaction.
const PLUGINS = 'users,projects,studies,assay-types,assays';
const databaseUrl = await createTestDatabase(t);
const cli = async (content: unknown) => runCliInProcess(['bootstrap', await tempFile(content)], { LABDATA_DATABASE_URL: databaseUrl, LABDATA_PLUGINS: PLUGINS });

const base = {
  organizations: [{ ref: 'acme', name: 'Acme' }],
  users: [{ ref: 'alice', email: 'alice@acme.test', memberships: [{ organization: 'acme', roles: ['ORGANIZATION_USER'] }] }],
  apiKeys: [{ ref: 'alice@acme', user: 'alice', organization: 'acme', name: 'ci', days: 30 }],
};
const first = await cli({
  ...base,
  assayTypes: [
    { ref: 'elisa', organization: 'acme', name: 'ELISA', status: 'ACTIVE', fields: [], tasks: [] },
    {
      ref: 'pcr',
      organization: 'acme',
      name: 'qPCR',
      description: 'Quantitative PCR',
      fields: [{ name: 'cycles', displayName: 'Cycles', type: 'INTEGER', required: true }, { name: 'dye', displayName: 'Dye', type: 'CHOICE', options: ['SYBR', 'TaqMan'] }],
      tasks: [{ label: 'Run', order: 2 }, { label: 'Prepare mix', order: 1 }],
    },
  ],
});
const server = await startTestServer(t, { databaseUrl, plugins: PLUGINS.split(',') });

t.test('bootstrap creates the assay types and prints their ids by ref', async (t) => {
  t.equal(first.code, 0, first.stderr);
  t.same(Object.keys(first.json.assayTypes).sort(), ['elisa', 'pcr']);
  const key = first.json.apiKeys['alice@acme'].key;
  const elisa = await server.get(`/api/v1/assay-types/${first.json.assayTypes.elisa.id}`, { key });
  t.equal(elisa.status, 200);
  t.match(elisa.body, { name: 'ELISA', status: 'ACTIVE', organizationId: first.json.organizations.acme.id, fields: [], tasks: [], createdById: null });
  const pcr = await server.get(`/api/v1/assay-types/${first.json.assayTypes.pcr.id}`, { key });
  t.match(pcr.body, { name: 'qPCR', description: 'Quantitative PCR', status: 'DRAFT' });
  t.same(pcr.body.fields, [
    { name: 'cycles', displayName: 'Cycles', type: 'INTEGER', required: true, description: null, options: null, defaultValue: null },
    { name: 'dye', displayName: 'Dye', type: 'CHOICE', required: false, description: null, options: ['SYBR', 'TaqMan'], defaultValue: null },
  ]);
  t.same(pcr.body.tasks, [{ label: 'Prepare mix', order: 1, fields: [] }, { label: 'Run', order: 2, fields: [] }]);
});

t.test('a bad assay type fails the whole file with one line naming the item', async (t) => {
  const count = async () => Number((await server.sql<{ n: string }>('select (select count(*) from assay_type) + (select count(*) from organization) as n'))[0].n);
  const before = await count();
  const org = { ref: 'initech', name: 'Initech' };
  const item = (extra: Record<string, unknown>) => ({ ref: 'bad', organization: 'initech', name: 'Bad', ...extra });
  const cases: [string, unknown, RegExp][] = [
    ['unknown organization', { assayTypes: [item({ organization: 'nope' })] }, /assayTypes "bad".*unknown organization "nope"/],
    ['blank name', { organizations: [org], assayTypes: [item({ name: ' ' })] }, /assayTypes "bad": name must not be blank/],
    ['unknown status', { organizations: [org], assayTypes: [item({ status: 'DELETED' })] }, /assayTypes "bad": status/],
    ['bad field', { organizations: [org], assayTypes: [item({ fields: [{ name: 'x', displayName: 'X', type: 'CHOICE' }] })] }, /assayTypes "bad": fields\.0\.options is required for a CHOICE field/],
    ['name taken', { organizations: [org], assayTypes: [item({ name: 'Dup', ref: 'a' }), item({ name: 'dup' })] }, /assayTypes "bad": .*"dup" already exists/],
  ];
  for (const [name, content, reason] of cases) {
    const res = await cli(content);
    t.not(res.code, 0, name);
    t.equal(res.stdout, '', `${name}: nothing on stdout`);
    t.equal(res.reasons.length, 1, `${name}: one reason line`);
    t.match(res.reasons[0], reason, name);
  }
  t.equal(await count(), before, 'nothing was written');
});
