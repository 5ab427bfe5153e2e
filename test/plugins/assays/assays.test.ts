import t from 'tap';
import { startTestServer, testCast, type Member } from '../../support/server.ts';
import { callTool, connectMcp, expectToolMatchesRest } from '../../support/mcp.ts';

const server = await startTestServer(t, { plugins: ['users', 'projects', 'studies', 'assay-types', 'assays'] });
const { org, admin, alice, bob, outsider } = await testCast(server);

async function created(res: { status: number; text: string; body: any }) {
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.text}`);
  return res.body;
}
async function project(owner: Member, visibility = 'PRIVATE') {
  return created(await server.post('/api/v1/projects', { code: 'P', name: 'P', description: 'd', visibility }, { key: owner.key }));
}
async function study(owner: Member, visibility = 'PRIVATE') {
  const p = await project(owner, visibility);
  return created(await server.post('/api/v1/studies', { projectId: p.id, name: 'Study' }, { key: owner.key }));
}
async function assayType(body: Record<string, unknown> = {}, by: Member = admin) {
  return created(await server.post('/api/v1/assay-types', { name: `Type ${crypto.randomUUID()}`, status: 'ACTIVE', ...body }, { key: by.key }));
}
async function assay(owner: Member, studyId: string, assayTypeId: string, extra: Record<string, unknown> = {}) {
  return created(await server.post('/api/v1/assays', { studyId, assayTypeId, name: 'Assay', ...extra }, { key: owner.key }));
}

const elisa = await assayType({
  fields: [
    { name: 'plate', displayName: 'Plate', type: 'TEXT', required: true },
    { name: 'dilution', displayName: 'Dilution', type: 'NUMBER' },
    { name: 'wells', displayName: 'Wells', type: 'INTEGER' },
    { name: 'corrected', displayName: 'Corrected', type: 'BOOLEAN' },
    { name: 'readAt', displayName: 'Read at', type: 'DATE' },
    { name: 'reader', displayName: 'Reader', type: 'CHOICE', options: ['Synergy', 'Spark'] },
  ],
  tasks: [{ label: 'Coat', order: 1 }],
});
const plain = await assayType();

t.test('create: studyId and assayTypeId required, contributor on the parent study, activity with every id', async (t) => {
  const s = await study(alice, 'PROTECTED');
  const res = await server.post(
    '/api/v1/assays',
    { studyId: s.id, assayTypeId: elisa.id, name: 'A1', description: 'first', startDate: '2024-05-01T10:00:00+02:00', values: { plate: 'P-1', dilution: 2.5 } },
    { key: alice.key },
  );
  t.equal(res.status, 201, res.text);
  t.match(res.body, {
    organizationId: org,
    projectId: s.projectId,
    studyId: s.id,
    assayTypeId: elisa.id,
    name: 'A1',
    description: 'first',
    startDate: '2024-05-01T08:00:00.000Z',
    status: 'ACTIVE',
    archived: false,
    createdById: alice.organizationUserId,
    version: 1,
  });
  t.same(res.body.values, { plate: 'P-1', dilution: 2.5 });
  t.same((await server.get(`/api/v1/assays/${res.body.id}`, { key: alice.key })).body, res.body);
  const dateOnly = await assay(alice, s.id, plain.id, { startDate: '2024-06-30' });
  t.equal(dateOnly.startDate, '2024-06-30T00:00:00.000Z');
  t.same(dateOnly.values, {});

  const missing = await server.post('/api/v1/assays', { name: 'A' }, { key: alice.key });
  t.equal(missing.status, 400);
  t.same(missing.body.errors.map((e: { field: string }) => e.field).sort(), ['assayTypeId', 'studyId']);
  t.ok(missing.body.errors.every((e: { message: string }) => e.message === 'is required'));
  const blank = await server.post('/api/v1/assays', { studyId: s.id, assayTypeId: plain.id, name: ' ' }, { key: alice.key });
  t.same(blank.body.errors, [{ field: 'name', message: 'must not be blank' }]);
  const badDate = await server.post('/api/v1/assays', { studyId: s.id, assayTypeId: plain.id, name: 'A', startDate: '2024-02-30' }, { key: alice.key });
  t.equal(badDate.status, 400);
  t.equal(badDate.body.errors[0].field, 'startDate');
  for (const field of ['elnA', 'useElnB']) {
    const eln = await server.post('/api/v1/assays', { studyId: s.id, assayTypeId: plain.id, name: 'A', [field]: field === 'elnA' ? {} : true }, { key: alice.key });
    t.equal(eln.status, 400, field);
    t.match(eln.body.errors[0], { field, message: /plugin is not enabled/ });
  }

  const [row] = await server.sql(`select event_type, category, project_id, study_id, data from activity where assay_id = ?`, [res.body.id]);
  t.same(row, { event_type: 'assay.created', category: 'RESEARCH', project_id: s.projectId, study_id: s.id, data: { name: 'A1', assayTypeId: elisa.id } });
});

t.test('create: only of an ACTIVE assay type of the organization', async (t) => {
  const s = await study(alice);
  const draft = await assayType({ status: 'DRAFT' });
  const res = await server.post('/api/v1/assays', { studyId: s.id, assayTypeId: draft.id, name: 'A' }, { key: alice.key });
  t.equal(res.status, 400);
  t.match(res.body.errors, [{ field: 'assayTypeId', message: /is DRAFT: only an ACTIVE assay type/ }]);
  for (const status of ['INACTIVE', 'ARCHIVED']) {
    const type = await assayType();
    await server.post(`/api/v1/assay-types/${type.id}/status`, { status }, { key: admin.key });
    const refused = await server.post('/api/v1/assays', { studyId: s.id, assayTypeId: type.id, name: 'A' }, { key: alice.key });
    t.equal(refused.status, 400, status);
    t.match(refused.body.errors, [{ field: 'assayTypeId', message: new RegExp(`is ${status}`) }]);
  }
  const deleted = await assayType();
  await server.delete(`/api/v1/assay-types/${deleted.id}`, { key: admin.key });
  const gone = await server.post('/api/v1/assays', { studyId: s.id, assayTypeId: deleted.id, name: 'A' }, { key: alice.key });
  t.equal(gone.status, 404, 'a deleted type cannot be used');
  t.match(gone.body.message, new RegExp(`Assay type.*${deleted.id}`));
  const foreign = await assayType({}, outsider);
  t.equal((await server.post('/api/v1/assays', { studyId: s.id, assayTypeId: foreign.id, name: 'A' }, { key: alice.key })).status, 404);
});

t.test('a new assay takes the defaults of the fields it is given no value for; LONG_TEXT and FILE values', async (t) => {
  const type = await assayType({
    fields: [
      { name: 'reps', displayName: 'Replicates', type: 'INTEGER', defaultValue: 3 },
      { name: 'notes', displayName: 'Notes', type: 'LONG_TEXT' },
      { name: 'raw', displayName: 'Raw data', type: 'FILE' },
    ],
  });
  const s = await study(alice);
  const defaulted = await assay(alice, s.id, type.id, { values: { notes: 'a\nb', raw: { name: 'plate.csv', url: 'https://files.example/plate.csv' } } });
  t.same(defaulted.values, { reps: 3, notes: 'a\nb', raw: { name: 'plate.csv', url: 'https://files.example/plate.csv' } });
  t.same((await assay(alice, s.id, type.id, { values: { reps: 5, raw: '/srv/data/plate.csv' } })).values, { reps: 5, raw: '/srv/data/plate.csv' }, 'a given value wins');
  t.same((await assay(alice, s.id, type.id, { values: { reps: null } })).values, {}, 'null: no value, not the default');
  const updated = await server.put(`/api/v1/assays/${defaulted.id}`, { values: { notes: null } }, { key: alice.key });
  t.same(updated.body.values, { reps: 3, raw: { name: 'plate.csv', url: 'https://files.example/plate.csv' } }, 'an update applies no default');
  for (const raw of ['', { size: 3 }, 7]) {
    const res = await server.post('/api/v1/assays', { studyId: s.id, assayTypeId: type.id, name: 'x', values: { raw } }, { key: alice.key });
    t.equal(res.status, 400, JSON.stringify(raw));
    t.match(res.body.errors, [{ field: 'values.raw', message: /file reference/ }]);
  }
});

t.test('values are checked against the type\'s fields (400 naming values.<field>)', async (t) => {
  const s = await study(alice);
  const post = (values: unknown) => server.post('/api/v1/assays', { studyId: s.id, assayTypeId: elisa.id, name: 'V', values }, { key: alice.key });
  const cases: [string, Record<string, unknown>, { field: string; message: string | RegExp }][] = [
    ['missing required value', {}, { field: 'values.plate', message: 'is required' }],
    ['required value null', { plate: null }, { field: 'values.plate', message: 'is required' }],
    ['TEXT given a number', { plate: 5 }, { field: 'values.plate', message: 'must be a string' }],
    ['NUMBER given a string', { plate: 'p', dilution: '2' }, { field: 'values.dilution', message: 'must be a number' }],
    ['INTEGER given a fraction', { plate: 'p', wells: 1.5 }, { field: 'values.wells', message: 'must be an integer' }],
    ['BOOLEAN given a string', { plate: 'p', corrected: 'true' }, { field: 'values.corrected', message: 'must be a boolean' }],
    ['DATE given text', { plate: 'p', readAt: 'yesterday' }, { field: 'values.readAt', message: /must be a date/ }],
    ['DATE impossible', { plate: 'p', readAt: '2024-02-30' }, { field: 'values.readAt', message: /must be a date/ }],
    ['DATE at hour 24', { plate: 'p', readAt: '2024-01-01T24:00:00Z' }, { field: 'values.readAt', message: /must be a date/ }],
    ['DATE in year 0000', { plate: 'p', readAt: '0000-01-01' }, { field: 'values.readAt', message: /must be a date/ }],
    ['DATE past 9999 in UTC', { plate: 'p', readAt: '9999-12-31T23:59:59-14:00' }, { field: 'values.readAt', message: /must be a date/ }],
    ['CHOICE not an option', { plate: 'p', reader: 'Other' }, { field: 'values.reader', message: 'must be one of: Synergy, Spark' }],
    ['unknown field', { plate: 'p', color: 'red' }, { field: 'values.color', message: /is not a field of assay type/ }],
  ];
  for (const [name, values, error] of cases) {
    const res = await post(values);
    t.equal(res.status, 400, name);
    t.match(res.body.errors, [error], name);
  }
  const several = await post({ plate: 1, wells: 'x' });
  t.same(several.body.errors.map((e: { field: string }) => e.field).sort(), ['values.plate', 'values.wells'], 'every bad value is named');
  t.equal((await post('not an object')).status, 400);
  t.equal((await post(JSON.parse('{"plate":"p","__proto__":{"x":1}}'))).status, 400, 'a "__proto__" key is refused');
  t.same(await server.sql(`select id from assay where name = 'V'`), [], 'nothing was written');

  const ok = await post({ plate: 'P-9', dilution: 1, wells: 96, corrected: false, readAt: '2024-03-01T12:00:00+01:00', reader: 'Spark', dilutionNote: undefined });
  t.equal(ok.status, 201, ok.text);
  t.same(ok.body.values, { plate: 'P-9', dilution: 1, wells: 96, corrected: false, readAt: '2024-03-01T11:00:00.000Z', reader: 'Spark' }, 'a date-time is stored in UTC');
  const day = await post({ plate: 'P-10', readAt: '2024-03-01' });
  t.equal(day.body.values.readAt, '2024-03-01', 'a date stays a date');
});

t.test('assays follow their study\'s project: reads, lists and totals', async (t) => {
  const priv = await study(alice);
  const pub = await study(alice, 'PUBLIC');
  const a1 = await assay(alice, priv.id, plain.id);
  const a2 = await assay(alice, pub.id, plain.id);
  t.equal((await server.get(`/api/v1/assays/${a1.id}`, { key: bob.key })).status, 404, 'non-member, PRIVATE project');
  t.equal((await server.get(`/api/v1/assays/${a2.id}`, { key: bob.key })).status, 200, 'member of the organization, PUBLIC project');
  t.equal((await server.get(`/api/v1/assays/${a1.id}`, { key: admin.key })).status, 200, 'admin');
  const foreign = await server.get(`/api/v1/assays/${a2.id}`, { key: outsider.key });
  t.equal(foreign.status, 404, 'other organization');
  t.match(foreign.body.message, new RegExp(`Assay.*${a2.id}`));

  const byStudy = await server.get(`/api/v1/studies/${priv.id}/assays`, { key: alice.key });
  t.equal(byStudy.status, 200);
  t.same(byStudy.body.content.map((a: { id: string }) => a.id), [a1.id]);
  t.equal(byStudy.body.totalElements, 1);
  const hidden = await server.get(`/api/v1/studies/${priv.id}/assays`, { key: bob.key });
  t.equal(hidden.status, 404);
  t.match(hidden.body.message, /Study/);
  t.equal((await server.get(`/api/v1/studies/${pub.id}/assays`, { key: outsider.key })).status, 404);

  const bobs = await server.get('/api/v1/assays?size=200', { key: bob.key });
  const ids = bobs.body.content.map((a: { id: string }) => a.id);
  t.ok(ids.includes(a2.id));
  t.notOk(ids.includes(a1.id));
  t.equal(bobs.body.totalElements, ids.length, 'the total counts only viewable assays');
  t.equal((await server.get('/api/v1/assays?size=200', { key: outsider.key })).body.totalElements, 0);
  const sorted = await server.get(`/api/v1/studies/${pub.id}/assays?sort=name,asc&size=1`, { key: alice.key });
  t.match(sorted.body, { size: 1, totalElements: 1, sort: { sorted: true } });
});

t.test('permission matrix of the writes: other organization 404, non-member 404 (PRIVATE) / 403 (PROTECTED), member and admin ok', async (t) => {
  const target = await study(alice, 'PUBLIC');
  const writes = (id: string): [string, string, unknown][] => [
    ['PUT', `/api/v1/assays/${id}`, { name: 'Renamed' }],
    ['POST', `/api/v1/assays/${id}/status`, { status: 'ON_HOLD' }],
    ['POST', `/api/v1/assays/${id}/archive?archived=true`, undefined],
    ['PATCH', `/api/v1/assays/${id}/move`, { studyId: target.id }],
    ['DELETE', `/api/v1/assays/${id}`, undefined],
  ];
  for (const visibility of ['PRIVATE', 'PROTECTED']) {
    const s = await study(alice, visibility);
    const a = await assay(alice, s.id, plain.id);
    const nonMember = visibility === 'PRIVATE' ? 404 : 403;
    for (const [method, path, body] of writes(a.id)) {
      t.equal((await server.request(method, path, { key: outsider.key, body })).status, 404, `other organization: ${method} ${path} (${visibility})`);
      const res = await server.request(method, path, { key: bob.key, body });
      t.equal(res.status, nonMember, `non-member: ${method} ${path} (${visibility})`);
      if (nonMember === 403) t.equal(res.text, '', 'empty body');
    }
    t.equal((await server.post('/api/v1/assays', { studyId: s.id, assayTypeId: plain.id, name: 'A' }, { key: bob.key })).status, nonMember, `non-member create (${visibility})`);
    t.equal((await server.post('/api/v1/assays', { studyId: s.id, assayTypeId: plain.id, name: 'A' }, { key: outsider.key })).status, 404);
    t.match((await server.get(`/api/v1/assays/${a.id}`, { key: alice.key })).body, { name: 'Assay', status: 'ACTIVE', archived: false, studyId: s.id }, 'nothing changed');
    for (const who of [alice, admin]) {
      const mine = await assay(who, s.id, plain.id);
      for (const [method, path, body] of writes(mine.id)) {
        const res = await server.request(method, path, { key: who.key, body });
        t.equal(res.status, method === 'DELETE' ? 204 : 200, `${who === admin ? 'admin' : 'member'}: ${method} ${path} (${visibility})`);
      }
    }
  }
});

t.test('update: merge, values merged and re-checked, read-only fields, version conflict, activity', async (t) => {
  const s = await study(alice, 'PROTECTED');
  const a = await assay(alice, s.id, elisa.id, { description: 'd', values: { plate: 'P-1', wells: 96, reader: 'Spark' } });
  const url = `/api/v1/assays/${a.id}`;
  const upd = await server.put(url, { name: 'Renamed', startDate: '2025-01-02', values: { wells: 48, reader: null, corrected: true } }, { key: alice.key });
  t.equal(upd.status, 200, upd.text);
  t.match(upd.body, { name: 'Renamed', description: 'd', startDate: '2025-01-02T00:00:00.000Z', version: 2 });
  t.same(upd.body.values, { plate: 'P-1', wells: 48, corrected: true }, 'given values replace, null removes, the rest stay');
  const wrong = await server.put(url, { values: { wells: 'many' } }, { key: alice.key });
  t.equal(wrong.status, 400);
  t.same(wrong.body.errors, [{ field: 'values.wells', message: 'must be an integer' }]);
  t.same((await server.put(url, { values: { plate: null } }, { key: alice.key })).body.errors, [{ field: 'values.plate', message: 'is required' }]);
  t.match((await server.put(url, { values: { nope: 1 } }, { key: alice.key })).body.errors, [{ field: 'values.nope' }]);

  t.equal((await server.put(url, { status: 'COMPLETE' }, { key: alice.key })).status, 400, 'status only through the status operation');
  const other = await study(alice);
  t.equal((await server.put(url, { studyId: other.id }, { key: alice.key })).status, 400, 'studyId only through move');
  const typeChange = await server.put(url, { assayTypeId: plain.id }, { key: alice.key });
  t.equal(typeChange.status, 400);
  t.same(typeChange.body.errors, [{ field: 'assayTypeId', message: 'cannot be changed: it is fixed when the assay is created' }]);
  const echo = await server.put(url, { ...upd.body, name: 'Echoed' }, { key: alice.key });
  t.equal(echo.status, 200, 'the GET body sent back (same status, study and type) is accepted');
  t.equal((await server.put(url, { name: 'x', version: 1 }, { key: alice.key })).status, 409, 'stale version');
  t.equal((await server.put(url, { name: 'x' }, { key: bob.key })).status, 403, 'viewer of a PROTECTED project');

  const rows = await server.sql<{ data: { fields: string[] }; project_id: string; study_id: string }>(
    `select data, project_id, study_id from activity where assay_id = ? and event_type = 'assay.updated' order by date`,
    [a.id],
  );
  t.same(rows[0], { data: { fields: ['name', 'startDate', 'values'] }, project_id: s.projectId, study_id: s.id });
});

t.test('the type may change while assays use it: existing assays keep working, new required fields bind new assays', async (t) => {
  const type = await assayType({ fields: [{ name: 'a', displayName: 'A', type: 'TEXT' }, { name: 'old', displayName: 'Old', type: 'TEXT' }] });
  const s = await study(alice);
  const a = await assay(alice, s.id, type.id, { values: { a: 'x', old: 'kept' } });
  await server.put(`/api/v1/assay-types/${type.id}`, { fields: [{ name: 'a', displayName: 'A', type: 'TEXT' }, { name: 'b', displayName: 'B', type: 'INTEGER', required: true }] }, { key: admin.key });
  const rename = await server.put(`/api/v1/assays/${a.id}`, { name: 'Still fine' }, { key: alice.key });
  t.equal(rename.status, 200, 'an update that leaves values alone is not blocked');
  t.same(rename.body.values, { a: 'x', old: 'kept' });
  const stale = await server.put(`/api/v1/assays/${a.id}`, { values: { a: 'y' } }, { key: alice.key });
  t.equal(stale.status, 400);
  t.match(stale.body.errors, [{ field: 'values.old', message: /not a field.*send null to remove/ }]);
  const fixed = await server.put(`/api/v1/assays/${a.id}`, { values: { a: 'y', old: null } }, { key: alice.key });
  t.equal(fixed.status, 200);
  t.same(fixed.body.values, { a: 'y' }, 'the new required field is not enforced on an existing assay');
  const fresh = await server.post('/api/v1/assays', { studyId: s.id, assayTypeId: type.id, name: 'New', values: { a: 'z' } }, { key: alice.key });
  t.same(fresh.body.errors, [{ field: 'values.b', message: 'is required' }], 'but it is on a new one');

  await server.delete(`/api/v1/assay-types/${type.id}`, { key: admin.key });
  const kept = await server.get(`/api/v1/assays/${a.id}`, { key: alice.key });
  t.equal(kept.status, 200, 'deleting the type leaves its assays valid');
  t.equal(kept.body.assayTypeId, type.id);
  t.equal((await server.put(`/api/v1/assays/${a.id}`, { values: { b: 3 } }, { key: alice.key })).status, 200, 'their values are still checked against it');
});

t.test('status and archive, with their activity', async (t) => {
  const s = await study(alice);
  const a = await assay(alice, s.id, plain.id);
  const status = await server.post(`/api/v1/assays/${a.id}/status`, { status: 'COMPLETE' }, { key: alice.key });
  t.equal(status.status, 200);
  t.equal(status.body.status, 'COMPLETE');
  const illegal = await server.post(`/api/v1/assays/${a.id}/status`, { status: 'INITIALIZING' }, { key: alice.key });
  t.equal(illegal.status, 400);
  t.match(illegal.body.message, /An assay cannot change status from COMPLETE to INITIALIZING/);
  t.equal((await server.post(`/api/v1/assays/${a.id}/status`, { status: 'DONE' }, { key: alice.key })).status, 400, 'unknown status');
  const arch = await server.post(`/api/v1/assays/${a.id}/archive?archived=true`, undefined, { key: alice.key });
  t.match(arch.body, { archived: true, status: 'COMPLETE' });
  const unarch = await server.post(`/api/v1/assays/${a.id}/archive?archived=false`, undefined, { key: alice.key });
  t.equal(unarch.body.archived, false);
  const rows = await server.sql<{ event_type: string; data: unknown; project_id: string; study_id: string }>(
    `select event_type, data, project_id, study_id from activity where assay_id = ? order by date`,
    [a.id],
  );
  t.same(rows.map((r) => r.event_type), ['assay.created', 'assay.status_changed', 'assay.archived', 'assay.archived']);
  t.same(rows[1].data, { oldStatus: 'ACTIVE', newStatus: 'COMPLETE' });
  t.same(rows[2].data, { archived: true });
  t.ok(rows.every((r) => r.project_id === s.projectId && r.study_id === s.id));
});

t.test('move needs contribution on both studies\' projects and is recorded on both sides', async (t) => {
  const from = await study(alice, 'PUBLIC');
  const to = await study(alice, 'PROTECTED');
  const a = await assay(alice, from.id, plain.id);
  const url = `/api/v1/assays/${a.id}/move`;
  t.equal((await server.request('PATCH', url, { key: bob.key, body: { studyId: to.id } })).status, 403, 'a PUBLIC source is moved from by its members only');
  await server.grant(from.projectId, bob);
  t.equal((await server.request('PATCH', url, { key: bob.key, body: { studyId: to.id } })).status, 403, 'bob contributes to the source only');
  const hidden = await study(alice);
  const notFound = await server.request('PATCH', url, { key: bob.key, body: { studyId: hidden.id } });
  t.equal(notFound.status, 404);
  t.match(notFound.body.message, new RegExp(`Study.*${hidden.id}`));
  t.equal((await server.request('PATCH', url, { key: alice.key, body: {} })).status, 400, 'studyId is required');
  const moved = await server.request('PATCH', url, { key: alice.key, body: { studyId: to.id } });
  t.equal(moved.status, 200);
  t.match(moved.body, { studyId: to.id, projectId: to.projectId });
  const rows = await server.sql<{ project_id: string; study_id: string; data: unknown }>(
    `select project_id, study_id, data from activity where assay_id = ? and event_type = 'assay.moved'`,
    [a.id],
  );
  t.same(rows.map((r) => `${r.project_id}/${r.study_id}`).sort(), [`${from.projectId}/${from.id}`, `${to.projectId}/${to.id}`].sort());
  for (const r of rows) t.same(r.data, { fromStudyId: from.id, toStudyId: to.id });
  t.equal((await server.get(`/api/v1/assays/${a.id}`, { key: bob.key })).status, 200, 'bob views it in the PROTECTED project');
});

t.test('delete an assay; deleting a study or a project deletes its assays', async (t) => {
  const s1 = await study(alice);
  const a1 = await assay(alice, s1.id, plain.id);
  const del = await server.delete(`/api/v1/assays/${a1.id}`, { key: alice.key });
  t.equal(del.status, 204);
  t.equal(del.text, '');
  t.equal((await server.get(`/api/v1/assays/${a1.id}`, { key: alice.key })).status, 404);
  t.equal((await server.delete(`/api/v1/assays/${a1.id}`, { key: alice.key })).status, 404);
  const [row] = await server.sql(`select project_id, study_id, data from activity where assay_id = ? and event_type = 'assay.deleted'`, [a1.id]);
  t.same(row, { project_id: s1.projectId, study_id: s1.id, data: { name: 'Assay' } });

  const a2 = await assay(alice, s1.id, plain.id);
  t.equal((await server.delete(`/api/v1/studies/${s1.id}`, { key: alice.key })).status, 204);
  t.same(await server.sql('select id from assay where id = ?', [a2.id]), []);

  const p = await project(alice);
  const studies = [];
  for (const name of ['S1', 'S2']) studies.push(await created(await server.post('/api/v1/studies', { projectId: p.id, name }, { key: alice.key })));
  const assays = [];
  for (const s of studies) for (let i = 0; i < 2; i++) assays.push(await assay(alice, s.id, elisa.id, { values: { plate: `P-${i}` } }));
  t.equal((await server.delete(`/api/v1/projects/${p.id}`, { key: alice.key })).status, 204);
  t.same(await server.sql('select id from study where project_id = ?', [p.id]), [], 'no study left');
  t.same(await server.sql('select id from assay where id in (?)', [assays.map((a) => a.id)]), [], 'no assay left');
  t.same(await server.sql('select status from assay_type where id = ?', [elisa.id]), [{ status: 'ACTIVE' }], 'the assay type stays');
});

t.test('tools list_assays, get_assay and list_assays_by_study mirror REST', async (t) => {
  const s = await study(bob, 'PROTECTED');
  for (let i = 0; i < 3; i++) await assay(bob, s.id, elisa.id, { values: { plate: `P-${i}`, readAt: '2024-01-0' + (i + 1) } });
  const hiddenStudy = await study(alice);
  const hidden = await assay(alice, hiddenStudy.id, plain.id);
  const client = await connectMcp(server.url, { key: bob.key, teardown: (fn) => t.teardown(fn) });
  const [first] = (await server.get(`/api/v1/studies/${s.id}/assays`, { key: bob.key })).body.content;
  await expectToolMatchesRest(t, server, client, bob.key, 'get_assay', { id: first.id }, `/assays/${first.id}`);
  await expectToolMatchesRest(t, server, client, bob.key, 'list_assays', {}, '/assays');
  await expectToolMatchesRest(t, server, client, bob.key, 'list_assays', { page: 1, size: 2 }, '/assays?page=1&size=2');
  await expectToolMatchesRest(t, server, client, bob.key, 'list_assays_by_study', { studyId: s.id }, `/studies/${s.id}/assays`);
  await expectToolMatchesRest(t, server, client, bob.key, 'list_assays_by_study', { studyId: s.id, page: 1, size: 2 }, `/studies/${s.id}/assays?page=1&size=2`);
  t.equal((await callTool(client, 'get_assay', { id: hidden.id })).isError, true, 'an assay bob may not view');
  t.equal((await callTool(client, 'list_assays_by_study', { studyId: hiddenStudy.id })).isError, true, 'a study bob may not view');
  const foreignStudy = await study(outsider, 'PUBLIC');
  const foreign = await assay(outsider, foreignStudy.id, (await assayType({}, outsider)).id);
  t.equal((await callTool(client, 'get_assay', { id: foreign.id })).isError, true, 'another organization\'s assay');
});
