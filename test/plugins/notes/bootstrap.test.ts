import t from 'tap';
import { randomUUID } from 'node:crypto';
import { createTestDatabase } from '../../support/db.ts';
import { startTestServer } from '../../support/server.ts';
import { runCliInProcess, tempFile } from '../../cli/labdata-cli.ts';

// The contract's bootstrap file, `notes` section: provisioned by the notes plugin through the
// real CLI, in the file's single transaction, then read back through the API.
const PLUGINS = 'users,projects,studies,assay-types,assays,notes';
const databaseUrl = await createTestDatabase(t);
const cli = async (content: unknown, plugins = PLUGINS) =>
  runCliInProcess(['bootstrap', await tempFile(content)], { LABDATA_DATABASE_URL: databaseUrl, LABDATA_PLUGINS: plugins });

const first = await cli({
  organizations: [{ ref: 'acme', name: 'Acme' }, { ref: 'globex', name: 'Globex' }],
  users: [
    { ref: 'alice', email: 'alice@acme.test', memberships: [{ organization: 'acme', roles: ['ORGANIZATION_USER'] }] },
    { ref: 'bob', email: 'bob@acme.test', memberships: [{ organization: 'acme', roles: ['ORGANIZATION_USER'] }] },
    { ref: 'gina', email: 'gina@globex.test', memberships: [{ organization: 'globex', roles: ['ORGANIZATION_ADMIN'] }] },
  ],
  apiKeys: [
    { ref: 'alice', user: 'alice', organization: 'acme', name: 'ci', days: 30 },
    { ref: 'bob', user: 'bob', organization: 'acme', name: 'ci', days: 30 },
    { ref: 'gina', user: 'gina', organization: 'globex', name: 'ci', days: 30 },
  ],
  assayTypes: [{ ref: 'elisa', organization: 'acme', name: 'ELISA', status: 'ACTIVE' }],
  notes: [
    { ref: 'n1', parent: { organization: 'acme' }, type: 'NOTE', format: 'MARKDOWN', content: 'hello', archived: false },
    { ref: 'old', parent: { organization: 'acme' }, type: 'COMMENT', format: 'TEXT', content: 'gone', archived: true },
    { parent: { organization: 'globex' }, type: 'TEMPLATE', format: 'QUILL', content: '{"ops":[]}' },
  ],
});
const server = await startTestServer(t, { databaseUrl, plugins: PLUGINS.split(',') });
const out = first.json;
const key = (ref: string) => out.apiKeys[ref].key as string;
const acme = out.organizations?.acme.id as string;

t.test('organization notes: created with the file, their ids printed by ref', async (t) => {
  t.equal(first.code, 0, first.stderr);
  t.same(Object.keys(out.notes).sort(), ['n1', 'old'], 'items with a ref are printed');
  const list = await server.get('/api/v1/organization-notes', { key: key('bob') });
  t.equal(list.status, 200);
  t.equal(list.body.totalElements, 1, 'the archived note is not returned');
  t.same(list.body.content[0], (await server.get(`/api/v1/organization-notes/${out.notes.n1.id}`, { key: key('bob') })).body);
  t.match(list.body.content[0], {
    id: out.notes.n1.id,
    organizationId: acme,
    parentType: 'ORGANIZATION',
    parentId: acme,
    type: 'NOTE',
    format: 'MARKDOWN',
    content: 'hello',
    version: 1,
    createdById: null,
  });
  t.equal((await server.get(`/api/v1/organization-notes/${out.notes.old.id}`, { key: key('bob') })).status, 404);
  const globex = await server.get('/api/v1/organization-notes', { key: key('gina') });
  t.match(globex.body.content, [{ type: 'TEMPLATE', format: 'QUILL', content: '{"ops":[]}', organizationId: out.organizations.globex.id }]);
  t.equal((await server.get(`/api/v1/organization-notes/${out.notes.n1.id}`, { key: key('gina') })).status, 404, 'another organization');
});

t.test('notes on a project, study and assay made through the API, and on an organization given by id', async (t) => {
  const post = async (path: string, body: unknown) => {
    const res = await server.post('/api/v1' + path, body, { key: key('alice') });
    if (res.status !== 201) throw new Error(`${path}: ${res.status} ${res.text}`);
    return res.body.id as string;
  };
  const projectId = await post('/projects', { code: 'P', name: 'P', description: 'd', visibility: 'PRIVATE' });
  const studyId = await post('/studies', { projectId, name: 'S' });
  const assayId = await post('/assays', { studyId, assayTypeId: out.assayTypes.elisa.id, name: 'A' });
  const res = await cli({
    notes: [
      { ref: 'p', parent: { projectId }, type: 'CONCLUSION', format: 'TIPTAP', content: '{"type":"doc"}' },
      // Ids in capitals are the same ids (stored in their canonical lowercase form).
      { ref: 's', parent: { studyId: studyId.toUpperCase() }, type: 'NOTE', format: 'TEXT', content: 'study note' },
      { ref: 'a', parent: { assayId }, type: 'COMMENT', format: 'MARKDOWN', content: '*assay*', archived: false },
      { ref: 'o', parent: { organization: acme.toUpperCase() }, type: 'NOTE', format: 'TEXT', content: 'by id' },
    ],
  });
  t.equal(res.code, 0, res.stderr);
  t.same(Object.keys(res.json), ['notes']);
  const cases: [string, string, string, Record<string, unknown>][] = [
    ['p', `/projects/${projectId}/notes`, 'PROJECT', { parentId: projectId, type: 'CONCLUSION', format: 'TIPTAP', content: '{"type":"doc"}' }],
    ['s', `/studies/${studyId}/notes`, 'STUDY', { parentId: studyId, type: 'NOTE', format: 'TEXT', content: 'study note' }],
    ['a', `/assays/${assayId}/notes`, 'ASSAY', { parentId: assayId, type: 'COMMENT', format: 'MARKDOWN', content: '*assay*' }],
    ['o', '/organization-notes', 'ORGANIZATION', { parentId: acme, content: 'by id' }],
  ];
  for (const [ref, list, parentType, fields] of cases) {
    const id = res.json.notes[ref].id;
    const got = await server.get(`/api/v1${list}/${id}`, { key: key('alice') });
    t.equal(got.status, 200, ref);
    t.match(got.body, { id, organizationId: acme, parentType, ...fields });
    const listed = await server.get(`/api/v1${list}?size=100`, { key: key('alice') });
    t.ok(listed.body.content.some((n: { id: string }) => n.id === id), `${ref} is listed`);
  }
  // The notes follow their parent's visibility: bob is no member of the PRIVATE project.
  t.equal((await server.get(`/api/v1/studies/${studyId}/notes/${res.json.notes.s.id}`, { key: key('bob') })).status, 404);
  t.equal((await server.get(`/api/v1/organization-notes/${res.json.notes.o.id}`, { key: key('bob') })).status, 200);
});

t.test('a bad note fails the whole file (nothing is written) with one line naming the item', async (t) => {
  const projectRes = await server.post('/api/v1/projects', { code: 'Q', name: 'Q', description: 'd' }, { key: key('alice') });
  const projectId = projectRes.body.id as string;
  const count = async () =>
    Number((await server.sql<{ n: string }>('select (select count(*) from note) + (select count(*) from note_version) + (select count(*) from organization) as n'))[0].n);
  const before = await count();
  const org = { ref: 'initech', name: 'Initech' };
  const good = { ref: 'fine', parent: { organization: 'initech' }, type: 'NOTE', format: 'TEXT', content: 'fine' };
  const item = (extra: Record<string, unknown>) => ({ ref: 'bad', parent: { projectId }, type: 'NOTE', format: 'TEXT', content: 'x', ...extra });
  const unknown = randomUUID();
  const cases: [string, Record<string, unknown>, RegExp, string?][] = [
    ['unknown organization ref', item({ parent: { organization: 'nope' } }), /notes "bad".*unknown organization "nope"/],
    ['unknown project', item({ parent: { projectId: unknown } }), new RegExp(`notes "bad": unknown project "${unknown}"`)],
    ['unknown study', item({ parent: { studyId: unknown } }), /notes "bad": unknown study/],
    ['unknown assay', item({ parent: { assayId: unknown } }), /notes "bad": unknown assay/],
    ['parent id not a UUID', item({ parent: { studyId: 'S-1' } }), /notes "bad": parent studyId must be a UUID/],
    ['no parent', item({ parent: undefined }), /notes "bad": parent must be one of/],
    ['two parents', item({ parent: { projectId, organization: 'initech' } }), /notes "bad": parent must be one of/],
    ['unknown parent kind', item({ parent: { taskId: unknown } }), /notes "bad": parent must be one of/],
    ['bad type', item({ type: 'MEMO' }), /notes "bad": type must be one of NOTE, COMMENT, CONCLUSION, TEMPLATE/],
    ['bad format', item({ format: 'HTML' }), /notes "bad": format must be one of TIPTAP, MARKDOWN, TEXT, QUILL/],
    ['no type', item({ type: undefined }), /notes "bad": type is required/],
    ['content not a string', item({ content: 42 }), /notes "bad": content must be a string/],
    ['archived not a boolean', item({ archived: 'no' }), /notes "bad": archived must be a boolean/],
    ['assays not enabled', item({ parent: { assayId: unknown } }), /notes "bad": parent assayId: no enabled plugin provides assay records/, 'users,projects,studies,notes'],
  ];
  for (const [name, bad, reason, plugins] of cases) {
    const res = await cli({ organizations: [org], notes: [good, bad] }, plugins);
    t.not(res.code, 0, name);
    t.equal(res.stdout, '', `${name}: nothing on stdout`);
    t.equal(res.reasons.length, 1, `${name}: one reason line`);
    t.match(res.reasons[0], reason, name);
  }
  const unnamed = await cli({ notes: [{ parent: { organization: acme }, type: 'NOTE', format: 'TEXT', content: 'ok' }, { parent: { organization: acme }, type: 'X', format: 'TEXT', content: '' }] });
  t.match(unnamed.reasons[0], /notes\[1\]: type must be one of/, 'an item without a ref is named by its index');
  t.equal(await count(), before, 'nothing was written');
});
