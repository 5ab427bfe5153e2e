import t from 'tap';
import { startTestServer, type Member } from '../../support/server.ts';
import { callTool, connectMcp, expectToolMatchesRest } from '../../support/mcp.ts';

const server = await startTestServer(t, { plugins: ['users', 'projects', 'studies', 'assay-types', 'assays'] });
const org = await server.organization();
const other = await server.organization();
const admin = await server.admin(org);
const alice = await server.member(org);
const outsider = await server.admin(other);

const ELISA_FIELDS = [
  { name: 'plateId', displayName: 'Plate', type: 'TEXT', required: true, description: 'Barcode on the plate' },
  { name: 'dilution', displayName: 'Dilution factor', type: 'NUMBER' },
  { name: 'wells', displayName: 'Wells used', type: 'INTEGER', required: false },
  { name: 'blank_corrected', displayName: 'Blank corrected', type: 'BOOLEAN' },
  { name: 'readAt', displayName: 'Read at', type: 'DATE' },
  { name: 'reader', displayName: 'Plate reader', type: 'CHOICE', options: ['Synergy', 'Spark'] },
];

let counter = 0;
async function assayType(body: Record<string, unknown> = {}, by: Member = admin) {
  const res = await server.post('/api/v1/assay-types', { name: `Type ${++counter}`, ...body }, { key: by.key });
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.text}`);
  return res.body;
}

t.test('create: an admin defines fields and standard tasks; new types start DRAFT', async (t) => {
  const res = await server.post(
    '/api/v1/assay-types',
    { name: 'ELISA', description: 'Sandwich ELISA', fields: ELISA_FIELDS, tasks: [{ label: 'Read plate', order: 2 }, { label: 'Coat plate', order: 1 }] },
    { key: admin.key },
  );
  t.equal(res.status, 201, res.text);
  t.match(res.body, { name: 'ELISA', description: 'Sandwich ELISA', status: 'DRAFT', organizationId: org, createdById: admin.organizationUserId, version: 1 });
  // Every property is present on every field; tasks come back in their order.
  t.same(res.body.fields, [
    { name: 'plateId', displayName: 'Plate', type: 'TEXT', required: true, description: 'Barcode on the plate', options: null, defaultValue: null },
    { name: 'dilution', displayName: 'Dilution factor', type: 'NUMBER', required: false, description: null, options: null, defaultValue: null },
    { name: 'wells', displayName: 'Wells used', type: 'INTEGER', required: false, description: null, options: null, defaultValue: null },
    { name: 'blank_corrected', displayName: 'Blank corrected', type: 'BOOLEAN', required: false, description: null, options: null, defaultValue: null },
    { name: 'readAt', displayName: 'Read at', type: 'DATE', required: false, description: null, options: null, defaultValue: null },
    { name: 'reader', displayName: 'Plate reader', type: 'CHOICE', required: false, description: null, options: ['Synergy', 'Spark'], defaultValue: null },
  ]);
  t.same(res.body.tasks, [{ label: 'Coat plate', order: 1, fields: [] }, { label: 'Read plate', order: 2, fields: [] }]);
  const fetched = await server.get(`/api/v1/assay-types/${res.body.id}`, { key: alice.key });
  t.equal(fetched.status, 200);
  t.same(fetched.body, res.body, 'a fetched type includes its fields and tasks');
  const { name, description, fields, tasks, version } = fetched.body;
  const resent = await server.put(`/api/v1/assay-types/${res.body.id}`, { name, description, fields, tasks, version }, { key: admin.key });
  t.equal(resent.status, 200, `the fields as read are accepted back, \`options: null\` included: ${resent.text}`);
  t.same(resent.body.fields, res.body.fields);

  const active = await assayType({ status: 'ACTIVE', tasks: [{ label: 'a' }, { label: 'b' }] });
  t.equal(active.status, 'ACTIVE', 'ACTIVE may be given on create');
  t.same(active.tasks, [{ label: 'a', order: 0, fields: [] }, { label: 'b', order: 1, fields: [] }], 'a task without order takes its index');
  const bare = await assayType();
  t.match(bare, { description: null, fields: [], tasks: [] });

  const [row] = await server.sql<{ event_type: string; category: string; project_id: null; study_id: null; assay_id: null; data: unknown }>(
    `select event_type, category, project_id, study_id, assay_id, data from activity where event_type = 'assay_type.created' and data->>'assayTypeId' = ?`,
    [res.body.id],
  );
  t.same(row, { event_type: 'assay_type.created', category: 'ADMINISTRATIVE', project_id: null, study_id: null, assay_id: null, data: { assayTypeId: res.body.id, name: 'ELISA', status: 'DRAFT' } });
});

t.test('create: each validation rule is a 400 naming the field', async (t) => {
  const field = (extra: Record<string, unknown>) => ({ name: 'f', displayName: 'F', type: 'TEXT', ...extra });
  const cases: [string, Record<string, unknown>, { field: string; message: RegExp | string }][] = [
    ['missing name', { name: undefined }, { field: 'name', message: 'is required' }],
    ['blank name', { name: '  ' }, { field: 'name', message: 'must not be blank' }],
    ['status other than DRAFT/ACTIVE', { status: 'INACTIVE' }, { field: 'status', message: 'must be one of DRAFT, ACTIVE' }],
    ['field name not an identifier', { fields: [field({ name: '1abc' })] }, { field: 'fields.0.name', message: /pattern/ }],
    ['field name with a space', { fields: [field({ name: 'a b' })] }, { field: 'fields.0.name', message: /pattern/ }],
    ['blank display name', { fields: [field({ displayName: ' ' })] }, { field: 'fields.0.displayName', message: 'must not be blank' }],
    ['missing display name', { fields: [field({ displayName: undefined })] }, { field: 'fields.0.displayName', message: 'is required' }],
    ['unknown field type', { fields: [field({ type: 'FLOAT' })] }, { field: 'fields.0.type', message: 'must be one of TEXT, LONG_TEXT, NUMBER, INTEGER, BOOLEAN, DATE, CHOICE, FILE' }],
    ['required not a boolean', { fields: [field({ required: 'yes' })] }, { field: 'fields.0.required', message: /boolean/ }],
    ['repeated field name (case-insensitive)', { fields: [field({ name: 'conc' }), field({ name: 'Conc' })] }, { field: 'fields.1.name', message: /repeats the name of fields.0/ }],
    ['CHOICE without options', { fields: [field({ type: 'CHOICE' })] }, { field: 'fields.0.options', message: 'is required for a CHOICE field' }],
    ['CHOICE with options null', { fields: [field({ type: 'CHOICE', options: null, defaultValue: null })] }, { field: 'fields.0.options', message: 'is required for a CHOICE field' }],
    ['CHOICE with no option', { fields: [field({ type: 'CHOICE', options: [] })] }, { field: 'fields.0.options', message: /fewer than 1/ }],
    ['options on a TEXT field', { fields: [field({ options: ['a'] })] }, { field: 'fields.0.options', message: 'is allowed only on a CHOICE field' }],
    ['repeated option', { fields: [field({ type: 'CHOICE', options: ['a', 'a'] })] }, { field: 'fields.0.options', message: 'repeats "a"' }],
    ['fields not a list', { fields: {} }, { field: 'fields', message: /array/ }],
    ['blank task label', { tasks: [{ label: '' }] }, { field: 'tasks.0.label', message: 'must not be blank' }],
    ['task order not an integer', { tasks: [{ label: 'x', order: 1.5 }] }, { field: 'tasks.0.order', message: /integer/ }],
  ];
  for (const [name, extra, error] of cases) {
    const res = await server.post('/api/v1/assay-types', { name: `V ${name}`, ...extra }, { key: admin.key });
    t.equal(res.status, 400, name);
    t.match(res.body.errors, [error], name);
  }
  t.same(await server.sql(`select id from assay_type where name like 'V %'`), [], 'nothing was written');
});

t.test('names are unique per organization among types that are not deleted (409)', async (t) => {
  const first = await assayType({ name: 'qPCR' });
  const dup = await server.post('/api/v1/assay-types', { name: 'QPCR' }, { key: admin.key });
  t.equal(dup.status, 409);
  t.match(dup.body.message, /"QPCR" already exists/);
  const padded = await server.post('/api/v1/assay-types', { name: ' qpcr ' }, { key: admin.key });
  t.equal(padded.status, 409, 'surrounding white space makes no other name');
  t.match(padded.body.message, /"qpcr" already exists/);
  t.equal((await assayType({ name: ' Western blot ' })).name, 'Western blot', 'a name is stored trimmed');
  t.equal((await server.post('/api/v1/assay-types', { name: 'qPCR' }, { key: outsider.key })).status, 201, 'another organization may use the name');
  const second = await assayType({ name: 'qPCR 2' });
  t.equal((await server.put(`/api/v1/assay-types/${second.id}`, { name: 'qpcr' }, { key: admin.key })).status, 409, 'rename onto a taken name');
  t.equal((await server.delete(`/api/v1/assay-types/${first.id}`, { key: admin.key })).status, 204);
  t.equal((await server.post('/api/v1/assay-types', { name: 'qPCR' }, { key: admin.key })).status, 201, 'a deleted type frees its name');
});

t.test('permissions: any member views; only admins write (403, empty body); other organization 404', async (t) => {
  const type = await assayType({ fields: ELISA_FIELDS });
  const base = `/api/v1/assay-types/${type.id}`;
  t.equal((await server.get(base, { key: alice.key })).status, 200, 'member views');
  t.equal((await server.get(base, { key: admin.key })).status, 200, 'admin views');
  const hidden = await server.get(base, { key: outsider.key });
  t.equal(hidden.status, 404, 'other organization');
  t.match(hidden.body.message, new RegExp(`Assay type.*${type.id}`));
  t.notOk((await server.get('/api/v1/assay-types?size=200', { key: outsider.key })).body.content.some((x: { id: string }) => x.id === type.id));

  const writes: [string, string, unknown][] = [
    ['POST', '/api/v1/assay-types', { name: 'By a member' }],
    ['PUT', base, { name: 'Renamed by a member' }],
    ['POST', `${base}/status`, { status: 'ACTIVE' }],
    ['DELETE', base, undefined],
  ];
  for (const [method, path, body] of writes) {
    const res = await server.request(method, path, { key: alice.key, body });
    t.equal(res.status, 403, `member: ${method} ${path}`);
    t.equal(res.text, '', 'empty body');
    if (path !== '/api/v1/assay-types') {
      t.equal((await server.request(method, path, { key: outsider.key, body })).status, 404, `other organization: ${method} ${path}`);
    }
  }
  const unchanged = await server.get(base, { key: alice.key });
  t.match(unchanged.body, { name: type.name, status: 'DRAFT', version: 1 });
  // Revoking the admin role applies at once.
  const former = await server.admin(org);
  await server.setRoles(former.organizationUserId, ['ORGANIZATION_USER']);
  t.equal((await server.post('/api/v1/assay-types', { name: 'Former admin' }, { key: former.key })).status, 403);
});

t.test('list: page envelope of live types, sorted by name by default', async (t) => {
  const org2 = await server.organization();
  const a2 = await server.admin(org2);
  const m2 = await server.member(org2);
  for (const name of ['Western blot', 'Flow cytometry', 'ELISA']) await assayType({ name }, a2);
  const gone = await assayType({ name: 'Zzz' }, a2);
  await server.delete(`/api/v1/assay-types/${gone.id}`, { key: a2.key });
  const page = await server.get('/api/v1/assay-types?size=2', { key: m2.key });
  t.equal(page.status, 200);
  t.match(page.body, { totalElements: 3, totalPages: 2, size: 2, number: 0, first: true, last: false, empty: false });
  t.same(page.body.content.map((x: { name: string }) => x.name), ['ELISA', 'Flow cytometry']);
  t.ok(Array.isArray(page.body.content[0].fields) && Array.isArray(page.body.content[0].tasks));
  const desc = await server.get('/api/v1/assay-types?sort=createdAt,desc', { key: m2.key });
  t.same(desc.body.content.map((x: { name: string }) => x.name), ['ELISA', 'Flow cytometry', 'Western blot']);
  t.equal((await server.get('/api/v1/assay-types?sort=bogus,asc', { key: m2.key })).status, 400);
});

t.test('fields: LONG_TEXT and FILE types, defaults checked against the type; standard tasks carry a form of fields', async (t) => {
  const fields = [
    { name: 'notes', displayName: 'Notes', type: 'LONG_TEXT', defaultValue: 'line 1\nline 2' },
    { name: 'raw', displayName: 'Raw data', type: 'FILE' },
    { name: 'reps', displayName: 'Replicates', type: 'INTEGER', defaultValue: 3 },
    { name: 'reader', displayName: 'Reader', type: 'CHOICE', options: ['A', 'B'], defaultValue: 'B' },
    { name: 'readAt', displayName: 'Read at', type: 'DATE', defaultValue: '2024-05-01T12:00:00+02:00' },
  ];
  const tasks = [{ label: 'Sign off', fields: [{ name: 'approved', displayName: 'Approved', type: 'BOOLEAN', required: true, defaultValue: false }] }];
  const type = await assayType({ fields, tasks });
  t.same(type.fields.map((f: { name: string; defaultValue: unknown }) => [f.name, f.defaultValue]), [
    ['notes', 'line 1\nline 2'], ['raw', null], ['reps', 3], ['reader', 'B'], ['readAt', '2024-05-01T10:00:00.000Z'],
  ], 'a date-time default is stored in UTC, as values are');
  t.same(type.tasks, [{ label: 'Sign off', order: 0, fields: [{ name: 'approved', displayName: 'Approved', type: 'BOOLEAN', required: true, description: null, options: null, defaultValue: false }] }]);
  const cases: [string, unknown, string][] = [
    ['an INTEGER default that is text', { fields: [{ name: 'n', displayName: 'N', type: 'INTEGER', defaultValue: 'three' }] }, 'fields.0.defaultValue'],
    ['a CHOICE default outside the options', { fields: [{ name: 'c', displayName: 'C', type: 'CHOICE', options: ['A'], defaultValue: 'Z' }] }, 'fields.0.defaultValue'],
    ['a FILE value that is not a reference', { fields: [{ name: 'f', displayName: 'F', type: 'FILE', defaultValue: { size: 1 } }] }, 'fields.0.defaultValue'],
    ['a task field with a repeated name', { tasks: [{ label: 'x', fields: [{ name: 'a', displayName: 'A', type: 'TEXT' }, { name: 'A', displayName: 'A', type: 'TEXT' }] }] }, 'tasks.0.fields.1.name'],
    ['a task field of an unknown type', { tasks: [{ label: 'x', fields: [{ name: 'a', displayName: 'A', type: 'FLOAT' }] }] }, 'tasks.0.fields.0.type'],
  ];
  for (const [what, body, field] of cases) {
    const res = await server.post('/api/v1/assay-types', { name: `Bad ${what}`, ...(body as object) }, { key: admin.key });
    t.equal(res.status, 400, what);
    t.equal(res.body.errors?.[0]?.field, field, what);
  }
});

t.test('update: merge, replace fields and tasks, version conflict, status read-only, activity', async (t) => {
  const type = await assayType({ description: 'first', fields: [{ name: 'a', displayName: 'A', type: 'TEXT' }], tasks: [{ label: 'one' }] });
  const url = `/api/v1/assay-types/${type.id}`;
  const renamed = await server.put(url, { name: `${type.name} v2` }, { key: admin.key });
  t.equal(renamed.status, 200);
  t.match(renamed.body, { name: `${type.name} v2`, description: 'first', fields: type.fields, tasks: type.tasks, version: 2 });
  const replaced = await server.put(url, { fields: [{ name: 'b', displayName: 'B', type: 'BOOLEAN', required: true }], tasks: [], description: null }, { key: admin.key });
  t.same(replaced.body.fields, [{ name: 'b', displayName: 'B', type: 'BOOLEAN', required: true, description: null, options: null, defaultValue: null }]);
  t.same(replaced.body.tasks, []);
  t.equal(replaced.body.description, null);
  const stale = await server.put(url, { name: 'x', version: 1 }, { key: admin.key });
  t.equal(stale.status, 409);
  t.equal((await server.put(url, { status: 'ACTIVE' }, { key: admin.key })).status, 400, 'status changes only through the status operation');
  t.equal((await server.put(url, { status: 'DRAFT', version: replaced.body.version }, { key: admin.key })).status, 200, 'echoing the status back is fine');
  const bad = await server.put(url, { fields: [{ name: 'c', displayName: 'C', type: 'CHOICE' }] }, { key: admin.key });
  t.equal(bad.status, 400);
  t.same(bad.body.errors, [{ field: 'fields.0.options', message: 'is required for a CHOICE field' }]);
  t.equal((await server.put(`/api/v1/assay-types/${crypto.randomUUID()}`, { name: 'x' }, { key: admin.key })).status, 404);
  const rows = await server.sql<{ data: { fields: string[] } }>(
    `select data from activity where event_type = 'assay_type.updated' and data->>'assayTypeId' = ? order by date`,
    [type.id],
  );
  // The PUT that only echoed the status back changed nothing, so it recorded nothing (README, Activity).
  t.same(rows.map((r) => r.data.fields), [['name'], ['description', 'fields', 'tasks']]);
});

t.test('status: allowed transitions, an illegal one is a 400 naming both states', async (t) => {
  const type = await assayType();
  const url = `/api/v1/assay-types/${type.id}/status`;
  const set = (status: string) => server.post(url, { status }, { key: admin.key });
  const steps: [string, number][] = [
    ['ACTIVE', 200],
    ['DRAFT', 400],
    ['INACTIVE', 200],
    ['ACTIVE', 200],
    ['ARCHIVED', 200],
    ['ACTIVE', 400],
    ['INACTIVE', 200],
    ['INACTIVE', 200],
    ['DELETED', 400],
  ];
  let current = 'DRAFT';
  for (const [status, code] of steps) {
    const res = await set(status);
    t.equal(res.status, code, `${current} -> ${status}`);
    if (code === 200) {
      t.equal(res.body.status, status);
      current = status;
    } else {
      t.match(res.body.message, new RegExp(`from ${current} to ${status}`), 'names both states');
    }
  }
  t.equal((await set('BOGUS')).status, 400);
  const rows = await server.sql<{ data: unknown; category: string }>(
    `select data, category from activity where event_type = 'assay_type.status_changed' and data->>'assayTypeId' = ? order by date`,
    [type.id],
  );
  t.same(rows.map((r) => r.data), [
    { assayTypeId: type.id, oldStatus: 'DRAFT', newStatus: 'ACTIVE' },
    { assayTypeId: type.id, oldStatus: 'ACTIVE', newStatus: 'INACTIVE' },
    { assayTypeId: type.id, oldStatus: 'INACTIVE', newStatus: 'ACTIVE' },
    { assayTypeId: type.id, oldStatus: 'ACTIVE', newStatus: 'ARCHIVED' },
    { assayTypeId: type.id, oldStatus: 'ARCHIVED', newStatus: 'INACTIVE' },
  ], 'one record per change; setting the current status again records nothing');
  t.ok(rows.every((r) => r.category === 'ADMINISTRATIVE'));
});

t.test('delete marks the type DELETED: gone from the API, the row is kept', async (t) => {
  const type = await assayType({ status: 'ACTIVE' });
  const url = `/api/v1/assay-types/${type.id}`;
  const del = await server.delete(url, { key: admin.key });
  t.equal(del.status, 204);
  t.equal(del.text, '');
  t.equal((await server.get(url, { key: admin.key })).status, 404);
  t.notOk((await server.get('/api/v1/assay-types?size=200', { key: admin.key })).body.content.some((x: { id: string }) => x.id === type.id));
  t.equal((await server.put(url, { name: 'again' }, { key: admin.key })).status, 404);
  t.equal((await server.post(`${url}/status`, { status: 'ACTIVE' }, { key: admin.key })).status, 404);
  t.equal((await server.delete(url, { key: admin.key })).status, 404);
  t.same(await server.sql('select status from assay_type where id = ?', [type.id]), [{ status: 'DELETED' }]);
  const [row] = await server.sql<{ data: unknown }>(`select data from activity where event_type = 'assay_type.deleted' and data->>'assayTypeId' = ?`, [type.id]);
  t.same(row.data, { assayTypeId: type.id, name: type.name });
});

t.test('tools list_assay_types and get_assay_type mirror REST', async (t) => {
  const type = await assayType({ fields: ELISA_FIELDS, tasks: [{ label: 'Coat', order: 1 }] });
  const client = await connectMcp(server.url, { key: alice.key, teardown: (fn) => t.teardown(fn) });
  await expectToolMatchesRest(t, server, client, alice.key, 'get_assay_type', { id: type.id }, `/assay-types/${type.id}`);
  await expectToolMatchesRest(t, server, client, alice.key, 'list_assay_types', {}, '/assay-types');
  await expectToolMatchesRest(t, server, client, alice.key, 'list_assay_types', { page: 1, size: 2 }, '/assay-types?page=1&size=2');
  const foreign = await server.post('/api/v1/assay-types', { name: 'Foreign' }, { key: outsider.key });
  t.equal((await callTool(client, 'get_assay_type', { id: foreign.body.id })).isError, true, 'another organization\'s type is not found');
  const gone = await assayType();
  await server.delete(`/api/v1/assay-types/${gone.id}`, { key: admin.key });
  t.equal((await callTool(client, 'get_assay_type', { id: gone.id })).isError, true, 'a deleted type is not found');
});
