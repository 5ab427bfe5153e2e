import t from 'tap';
import { createTestDatabase } from '../../support/db.ts';
import { startTestServer, TEST_SECRET_KEY } from '../../support/server.ts';
import { runCliInProcess, tempFile } from '../../cli/labdata-cli.ts';

// The contract's bootstrap file, `storageDrives` section, through the real CLI: drives (LOCAL
// and S3, credentials sealed), shared folders, the default drive, and the output by ref.
const PLUGINS = 'users,projects,studies,assay-types,assays,storage';
const databaseUrl = await createTestDatabase(t);
const env = { LABDATA_DATABASE_URL: databaseUrl, LABDATA_PLUGINS: PLUGINS, LABDATA_SECRET_KEY: TEST_SECRET_KEY };
const cli = async (content: unknown) => runCliInProcess(['bootstrap', await tempFile(content)], env);

const first = await cli({
  organizations: [{ ref: 'acme', name: 'Acme' }],
  users: [{ ref: 'alice', email: 'alice@acme.test', memberships: [{ organization: 'acme', roles: ['ORGANIZATION_USER'] }] }],
  apiKeys: [{ ref: 'alice@acme', user: 'alice', organization: 'acme', name: 'ci', days: 30 }],
  storageDrives: [
    { ref: 'nas', organization: 'acme', name: 'Lab NAS', kind: 'LOCAL', rootPath: '/srv/lab-nas', sharedFolders: [{ ref: 'protocols', path: 'protocols' }] },
    {
      ref: 'cloud',
      organization: 'acme',
      name: 'Cloud',
      kind: 'S3',
      endpoint: 'https://s3.eu-west-1.amazonaws.com',
      region: 'eu-west-1',
      bucket: 'acme-lab',
      credentials: { accessKeyId: 'AKIAACME', secretAccessKey: 'top-secret-value' },
      default: true,
    },
  ],
});
const server = await startTestServer(t, { databaseUrl, plugins: PLUGINS.split(',') });

t.test('bootstrap creates the drives and prints their ids by ref; the secret is sealed', async (t) => {
  t.equal(first.code, 0, first.stderr);
  t.notMatch(first.stdout, 'top-secret-value', 'the output shows no credentials');
  t.match(first.json.storageDrives, { nas: { id: String, sharedFolders: { protocols: { id: String } } }, cloud: { id: String } });
  const key = first.json.apiKeys['alice@acme'].key;
  const drives = await server.get('/api/v1/storage-drives', { key });
  t.equal(drives.status, 200);
  t.same(drives.body.content.map((d: Record<string, unknown>) => [d.name, d.kind, d.isDefault, d.hasCredentials]), [
    ['Cloud', 'S3', true, true],
    ['Lab NAS', 'LOCAL', false, false],
  ], 'the S3 drive is the default: no embedded one is made');
  t.notMatch(drives.text, 'top-secret-value');
  const [row] = await server.sql<{ credentials: string }>('select credentials from storage_drive where id = ?', [first.json.storageDrives.cloud.id]);
  t.notMatch(row.credentials, 'top-secret-value');
  t.same(server.kernel.services.secrets.open(row.credentials), { accessKeyId: 'AKIAACME', secretAccessKey: 'top-secret-value' });
  const shared = await server.get(`/api/v1/shared-storage-folders/${first.json.storageDrives.nas.sharedFolders.protocols.id}`, { key });
  t.match(shared.body, { path: 'protocols', name: 'protocols', driveId: first.json.storageDrives.nas.id });
});

t.test('a bad drive fails the whole file with one line naming the item', async (t) => {
  const count = async () => Number((await server.sql<{ n: string }>('select (select count(*) from storage_drive) + (select count(*) from organization) as n'))[0].n);
  const before = await count();
  const res = await cli({
    organizations: [{ ref: 'initech', name: 'Initech' }],
    storageDrives: [{ ref: 'bad', organization: 'initech', name: 'Bad', kind: 'S3', endpoint: 'https://s3.test', region: 'r', bucket: 'b' }],
  });
  t.not(res.code, 0);
  t.equal(res.stdout, '');
  t.equal(res.reasons.length, 1);
  t.match(res.reasons[0], /storageDrives "bad": credentials is required for an S3 drive/);
  t.equal(await count(), before, 'nothing was written');
});
