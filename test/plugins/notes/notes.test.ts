import t from 'tap';
import { randomUUID } from 'node:crypto';
import { setTimeout } from 'node:timers/promises';
import pino from 'pino';
import { startTestServer, testCast, type Member } from '../../support/server.ts';
import { callTool, connectMcp, expectToolMatchesRest, resultText } from '../../support/mcp.ts';
import { bases, records } from '../external-links/records.ts';
import { db, errors, type OperationContext } from '../../../core/public.ts';
import { NoteService, type NewNote, type NoteParent } from '../../../plugins/notes/service.ts';

const server = await startTestServer(t, { plugins: ['users', 'projects', 'studies', 'assay-types', 'assays', 'notes'] });
const { org, other, admin, alice, bob, outsider } = await testCast(server);
const make = records(server);
const notes = new NoteService(server.kernel.services);
const log = pino({ level: 'silent' }) as unknown as OperationContext['log'];

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const api = (path: string) => '/api/v1' + path;

/** What the kernel builds for a request of this member (the note service's edit runs as it). */
function context(m: Member, roles = ['ORGANIZATION_USER']): OperationContext {
  const actor = { keyId: m.keyId, userId: m.userId, organizationId: m.organizationId, organizationUserId: m.organizationUserId, roles, isAdmin: roles.includes('ORGANIZATION_ADMIN') };
  return { actor, em: server.orm.em.fork(), services: server.kernel.services, log };
}

async function note(parent: NoteParent, fields: Partial<NewNote> = {}, organizationId = org) {
  return notes.create(server.orm.em.fork(), { organizationId, parent, type: 'NOTE', format: 'MARKDOWN', content: '# hello', ...fields });
}

// alice's PROTECTED tree (bob views it) and PRIVATE tree (bob does not).
const shared = await make.tree(alice, admin, 'PROTECTED');
const secret = await make.tree(alice, admin, 'PRIVATE');
const foreign = await make.tree(outsider, outsider, 'PUBLIC');
/** Each parent of a tree as a note parent, with its REST base (`/organization-notes` for the organization). */
const places = (tree: typeof shared, orgId = org) => [
  { kind: 'organization', id: orgId, list: '/organization-notes', tool: 'organization' },
  ...bases(tree).map((b) => ({ kind: b.kind as string, id: b.id, list: `${b.base}/notes`, tool: b.kind as string })),
];

t.test('notes of the organization, a project, a study and an assay: list and get, current content only', async (t) => {
  for (const place of places(shared)) {
    const created = await note({ kind: place.kind, id: place.id }, { type: 'CONCLUSION', format: 'TEXT', content: `about the ${place.kind}` });
    t.match(created, { id: UUID, parentType: place.kind.toUpperCase(), parentId: place.id, version: 1, content: `about the ${place.kind}` });
    const list = await server.get(api(place.list), { key: bob.key });
    t.equal(list.status, 200, place.list);
    t.match(list.body, { number: 0, size: 20, first: true, empty: false });
    const item = list.body.content.find((n: { id: string }) => n.id === created.id);
    t.same(Object.keys(item).sort(), ['content', 'createdAt', 'createdById', 'format', 'id', 'organizationId', 'parentId', 'parentType', 'type', 'updatedAt', 'version']);
    t.match(item, {
      id: created.id,
      organizationId: org,
      parentType: place.kind.toUpperCase(),
      parentId: place.id,
      type: 'CONCLUSION',
      format: 'TEXT',
      content: `about the ${place.kind}`,
      version: 1,
      createdById: null,
    });
    // The id in a list item resolves directly through the matching get-by-id path.
    const got = await server.get(api(`${place.list}/${item.id}`), { key: bob.key });
    t.equal(got.status, 200);
    t.same(got.body, item, `${place.kind}: GET by id equals the list item`);
  }
});

t.test('every type and format is returned as stored; a creator is recorded when given', async (t) => {
  const study = await make.study(alice, shared.project.id);
  const actor = context(alice).actor;
  for (const type of ['NOTE', 'COMMENT', 'CONCLUSION', 'TEMPLATE']) {
    for (const format of ['TIPTAP', 'MARKDOWN', 'TEXT', 'QUILL']) await note({ kind: 'study', id: study.id }, { type, format, content: `${type}/${format}`, actor });
  }
  const list = await server.get(api(`/studies/${study.id}/notes?size=100`), { key: alice.key });
  t.equal(list.body.totalElements, 16);
  t.same(list.body.content.map((n: { type: string; format: string; content: string }) => `${n.type}/${n.format}`).sort(), list.body.content.map((n: { content: string }) => n.content).sort());
  t.ok(list.body.content.every((n: { createdById: string }) => n.createdById === alice.organizationUserId));
  const page = await server.get(api(`/studies/${study.id}/notes?size=5&page=3&sort=type,asc`), { key: alice.key });
  t.match(page.body, { totalElements: 16, totalPages: 4, number: 3, last: true });
  t.equal(page.body.content.length, 1);
  t.equal(page.body.content[0].type, 'TEMPLATE');
});

t.test('archived notes are never returned, neither listed nor by id (nor through a tool)', async (t) => {
  const tree = await make.tree(alice, admin, 'PUBLIC');
  const client = await connectMcp(server.url, { key: alice.key, teardown: (fn) => t.teardown(fn) });
  const orgOf = await server.organization();
  const member = await server.member(orgOf);
  for (const place of places(tree, orgOf)) {
    const owner = place.kind === 'organization' ? member : alice;
    const organizationId = place.kind === 'organization' ? orgOf : org;
    const kept = await note({ kind: place.kind, id: place.id }, { content: 'kept' }, organizationId);
    const archived = await note({ kind: place.kind, id: place.id }, { content: 'archived', archived: true }, organizationId);
    const list = await server.get(api(`${place.list}?size=100`), { key: owner.key });
    t.same(list.body.content.map((n: { id: string }) => n.id), [kept.id], `${place.kind}: only the kept note is listed`);
    t.equal(list.body.totalElements, 1);
    const got = await server.get(api(`${place.list}/${archived.id}`), { key: owner.key });
    t.equal(got.status, 404, `${place.kind}: an archived note is a 404`);
    t.match(got.body, { statusCode: 404, message: `Note with id ${archived.id} not found` });
    if (place.kind !== 'organization') {
      const tool = await callTool(client, `get_${place.tool}_note`, { id: archived.id });
      t.equal(tool.isError, true, `get_${place.tool}_note: archived`);
    }
  }
});

t.test('a note resolves only under its own parent: another parent (of any kind) or organization is a 404', async (t) => {
  const sibling = await make.study(alice, shared.project.id);
  const studyNote = await note({ kind: 'study', id: shared.study.id });
  const orgNote = await note({ kind: 'organization', id: org });
  const foreignNote = await note({ kind: 'organization', id: other }, {}, other);
  const foreignProjectNote = await note({ kind: 'project', id: foreign.project.id }, {}, other);
  const cases: [string, string][] = [
    [`/studies/${sibling.id}/notes/${studyNote.id}`, 'a sibling study'],
    [`/projects/${shared.project.id}/notes/${studyNote.id}`, 'the study\'s project'],
    [`/assays/${shared.assay.id}/notes/${studyNote.id}`, 'an assay of the study'],
    [`/organization-notes/${studyNote.id}`, 'the organization'],
    [`/projects/${shared.project.id}/notes/${orgNote.id}`, 'a project, for an organization note'],
    [`/organization-notes/${foreignNote.id}`, 'another organization\'s organization note'],
    [`/organization-notes/${randomUUID()}`, 'no note at all'],
    [`/projects/${shared.project.id}/notes/${foreignProjectNote.id}`, 'another organization\'s project note under ours'],
  ];
  for (const [path, what] of cases) {
    const res = await server.get(api(path), { key: admin.key });
    t.equal(res.status, 404, what);
    t.match(res.body, { statusCode: 404, error: 'Not Found', message: /^Note with id .* not found$/, path: api(path) });
  }
  const list = await server.get(api(`/projects/${shared.project.id}/notes?size=100`), { key: admin.key });
  t.notOk(list.body.content.some((n: { id: string }) => n.id === studyNote.id), 'a project lists its own notes, not its studies\'');
  const theirs = await server.get(api(`/projects/${foreign.project.id}/notes/${foreignProjectNote.id}`), { key: admin.key });
  t.equal(theirs.status, 404, 'another organization\'s project is a 404');
  t.match(theirs.body, { message: `Project with id ${foreign.project.id} not found` });
  t.equal((await server.get(api(`/projects/${foreign.project.id}/notes/${foreignProjectNote.id}`), { key: outsider.key })).status, 200, 'its own organization reads it');
});

t.test('notes are read-only: a write method on a notes path is a 404 or 405 with the error envelope', async (t) => {
  const n = await note({ kind: 'project', id: shared.project.id });
  const o = await note({ kind: 'organization', id: org });
  const body = { type: 'NOTE', format: 'TEXT', content: 'x' };
  const count = async () => Number((await server.sql<{ n: string }>('select count(*) as n from note'))[0].n);
  const before = await count();
  const cases: [string, string][] = [];
  for (const path of [`/projects/${shared.project.id}/notes`, `/studies/${shared.study.id}/notes`, `/assays/${shared.assay.id}/notes`, '/organization-notes']) {
    cases.push(['POST', path], ['PUT', path], ['DELETE', path]);
  }
  for (const path of [`/projects/${shared.project.id}/notes/${n.id}`, `/organization-notes/${o.id}`]) {
    cases.push(['POST', path], ['PUT', path], ['PATCH', path], ['DELETE', path]);
  }
  for (const [method, path] of cases) {
    const res = await server.request(method, api(path), { key: admin.key, body: method === 'DELETE' ? undefined : body });
    t.ok(res.status === 404 || res.status === 405, `${method} ${path}: ${res.status}`);
    t.match(res.body, { statusCode: res.status, error: /Not Found|Method Not Allowed/, message: String, path: api(path), timestamp: String });
  }
  t.equal((await server.get(api(`/projects/${shared.project.id}/notes/${n.id}`), { key: admin.key })).body.content, '# hello', 'unchanged');
  t.equal(await count(), before, 'nothing was created or deleted');
});

t.test('visibility follows the parent: PRIVATE of someone else and other organizations are 404', async (t) => {
  const hidden = await note({ kind: 'study', id: secret.study.id }, { content: 'secret' });
  const visible = await note({ kind: 'study', id: shared.study.id }, { content: 'shared' });
  const orgNote = await note({ kind: 'organization', id: org }, { content: 'for everyone' });
  // bob is no member: the PRIVATE study and its notes do not exist for him.
  t.equal((await server.get(api(`/studies/${secret.study.id}/notes`), { key: bob.key })).status, 404);
  const get = await server.get(api(`/studies/${secret.study.id}/notes/${hidden.id}`), { key: bob.key });
  t.equal(get.status, 404);
  t.match(get.body, { message: `Study with id ${secret.study.id} not found` });
  t.equal((await server.get(api(`/studies/${shared.study.id}/notes/${visible.id}`), { key: bob.key })).status, 200, 'PROTECTED: bob reads');
  for (const who of [alice, admin]) t.equal((await server.get(api(`/studies/${secret.study.id}/notes/${hidden.id}`), { key: who.key })).status, 200);
  // Another organization: nothing of ours, not even the organization notes.
  for (const path of [`/studies/${shared.study.id}/notes`, `/studies/${shared.study.id}/notes/${visible.id}`, `/organization-notes/${orgNote.id}`]) {
    t.equal((await server.get(api(path), { key: outsider.key })).status, 404, `outsider ${path}`);
  }
  const theirs = await server.get(api('/organization-notes?size=100'), { key: outsider.key });
  t.notOk(theirs.body.content.some((n: { id: string }) => n.id === orgNote.id), 'another organization lists none of ours');
  const ours = await server.get(api('/organization-notes?size=100'), { key: bob.key });
  t.ok(ours.body.content.some((n: { id: string }) => n.id === orgNote.id), 'every member lists the organization notes');
});

t.test('a moved study takes its notes along', async (t) => {
  const study = await make.study(alice, shared.project.id);
  const n = await note({ kind: 'study', id: study.id });
  const client = await connectMcp(server.url, { key: bob.key, teardown: (fn) => t.teardown(fn) });
  t.notOk((await callTool(client, 'get_study_note', { id: n.id })).isError, 'bob sees it in the PROTECTED project');
  const moved = await server.request('PATCH', api(`/studies/${study.id}/move`), { key: alice.key, body: { projectId: secret.project.id } });
  t.equal(moved.status, 200);
  t.equal((await server.get(api(`/studies/${study.id}/notes/${n.id}`), { key: bob.key })).status, 404);
  t.equal((await callTool(client, 'get_study_note', { id: n.id })).isError, true, 'nor through the tool');
  t.equal((await server.get(api(`/studies/${study.id}/notes/${n.id}`), { key: alice.key })).status, 200);
});

t.test('tools: every notes tool equals its REST GET; a note or parent not viewable is an error result', async (t) => {
  const tree = await make.tree(alice, admin, 'PROTECTED');
  const orgOf = await server.organization();
  const member = await server.member(orgOf);
  const ids: Record<string, string> = {};
  for (const place of places(tree, orgOf)) {
    const organizationId = place.kind === 'organization' ? orgOf : org;
    for (const content of ['one', 'two', 'three']) ids[place.kind] = (await note({ kind: place.kind, id: place.id }, { content }, organizationId)).id;
  }
  const bobClient = await connectMcp(server.url, { key: bob.key, teardown: (fn) => t.teardown(fn) });
  const memberClient = await connectMcp(server.url, { key: member.key, teardown: (fn) => t.teardown(fn) });
  const names = (await bobClient.listTools()).tools.map((tool) => tool.name).filter((name) => name.includes('note'));
  t.same(names.sort(), ['get_assay_note', 'get_organization_note', 'get_project_note', 'get_study_note', 'list_assay_notes', 'list_organization_notes', 'list_project_notes', 'list_study_notes']);
  for (const place of places(tree, orgOf)) {
    const [who, client] = place.kind === 'organization' ? [member, memberClient] : [bob, bobClient];
    const args = place.kind === 'organization' ? {} : { [`${place.kind}Id`]: place.id };
    await expectToolMatchesRest(t, server, client, who.key, `list_${place.tool}_notes`, args, place.list);
    await expectToolMatchesRest(t, server, client, who.key, `list_${place.tool}_notes`, { ...args, page: 1, size: 2 }, `${place.list}?page=1&size=2`);
    // The look-up tool takes the note's id alone and returns what the parent's get path does.
    await expectToolMatchesRest(t, server, client, who.key, `get_${place.tool}_note`, { id: ids[place.kind] }, `${place.list}/${ids[place.kind]}`);
  }
  const hidden = await note({ kind: 'project', id: secret.project.id });
  const studyNote = await note({ kind: 'study', id: shared.study.id });
  const orgNote = await note({ kind: 'organization', id: org });
  const errors: [string, Record<string, unknown>, string][] = [
    ['get_project_note', { id: hidden.id }, 'a note of a PRIVATE project of someone else'],
    ['get_project_note', { id: studyNote.id }, 'a study note through the project tool'],
    ['get_study_note', { id: orgNote.id }, 'an organization note through the study tool'],
    ['get_organization_note', { id: studyNote.id }, 'a study note through the organization tool'],
    ['get_assay_note', { id: randomUUID() }, 'no such note'],
    ['list_project_notes', { projectId: secret.project.id }, 'a PRIVATE project of someone else'],
    ['list_study_notes', { studyId: foreign.study.id }, 'another organization\'s study'],
  ];
  for (const [tool, args, what] of errors) {
    const result = await callTool(bobClient, tool, args);
    t.equal(result.isError, true, `${tool}: ${what}`);
    t.match(resultText(result), /not found/i);
    t.match(resultText(result), String(Object.values(args)[0]));
  }
  const outsiderClient = await connectMcp(server.url, { key: outsider.key, teardown: (fn) => t.teardown(fn) });
  t.equal((await callTool(outsiderClient, 'get_organization_note', { id: orgNote.id })).isError, true, 'another organization\'s organization note');
  t.equal((await callTool(outsiderClient, 'get_study_note', { id: studyNote.id })).isError, true, 'another organization\'s study note');
});

t.test('the note service: an edit adds a version, the content shown is the latest, note.updated records the editor', async (t) => {
  const n = await note({ kind: 'assay', id: shared.assay.id }, { content: 'v1' });
  const path = api(`/assays/${shared.assay.id}/notes/${n.id}`);
  const edited = await notes.edit(context(alice), n.id, { content: 'v2' });
  t.match(edited, { id: n.id, content: 'v2', version: 2, type: 'NOTE', format: 'MARKDOWN' });
  const got = await server.get(path, { key: bob.key });
  t.match(got.body, { content: 'v2', version: 2 });
  t.same(got.body, edited, 'the service returns what the API shows');
  t.ok(got.body.updatedAt > n.updatedAt, 'updatedAt moves');
  t.equal(got.body.createdAt, n.createdAt);
  await notes.edit(context(admin, ['ORGANIZATION_ADMIN']), n.id, { content: 'v3', format: 'TEXT', type: 'COMMENT' });
  t.match((await server.get(path, { key: bob.key })).body, { content: 'v3', version: 3, format: 'TEXT', type: 'COMMENT' });
  const versions = await server.sql<{ version: number; content: string; created_by_id: string | null }>(
    'select version, content, created_by_id from note_version where note_id = ? order by version', [n.id]);
  t.same(versions, [
    { version: 1, content: 'v1', created_by_id: null },
    { version: 2, content: 'v2', created_by_id: alice.organizationUserId },
    { version: 3, content: 'v3', created_by_id: admin.organizationUserId },
  ], 'every version is kept internally');
  const list = await server.get(api(`/assays/${shared.assay.id}/notes?size=100`), { key: bob.key });
  t.equal(list.body.content.filter((x: { id: string }) => x.id === n.id).length, 1, 'one list item per note, whatever its versions');

  // An edit that changes nothing adds no version and records nothing.
  t.equal((await notes.edit(context(alice), n.id, { content: 'v3', type: 'COMMENT' })).version, 3);
  const events = await server.sql<{ event_type: string; category: string; data: Record<string, unknown>; project_id: string; study_id: string; assay_id: string; organization_user_id: string }>(
    `select event_type, category, data, project_id, study_id, assay_id, organization_user_id from activity where data->>'noteId' = ? order by date`, [n.id]);
  t.same(events, [
    { event_type: 'note.updated', category: 'RESEARCH', data: { noteId: n.id, version: 2, fields: ['content'] }, project_id: shared.project.id, study_id: shared.study.id, assay_id: shared.assay.id, organization_user_id: alice.organizationUserId },
    { event_type: 'note.updated', category: 'RESEARCH', data: { noteId: n.id, version: 3, fields: ['type', 'format', 'content'] }, project_id: shared.project.id, study_id: shared.study.id, assay_id: shared.assay.id, organization_user_id: admin.organizationUserId },
  ]);

  // Archiving through the service hides the note from the API; unarchiving brings it back.
  await notes.edit(context(alice), n.id, { archived: true });
  t.equal((await server.get(path, { key: alice.key })).status, 404);
  await notes.edit(context(alice), n.id, { archived: false });
  t.equal((await server.get(path, { key: alice.key })).body.content, 'v3');
});

t.test('the note service: edit permissions follow the parent; bad values are refused', async (t) => {
  const hidden = await note({ kind: 'study', id: secret.study.id });
  const shown = await note({ kind: 'study', id: shared.study.id });
  const orgNote = await note({ kind: 'organization', id: org }, { content: 'org v1' });
  const refused = async (ctx: OperationContext, id: string, changes: Record<string, unknown>) => notes.edit(ctx, id, changes).then(() => undefined, (e: unknown) => e);
  t.type(await refused(context(bob), hidden.id, { content: 'x' }), errors.NotFoundError, 'bob may not view the PRIVATE study: 404');
  t.match(await refused(context(bob), hidden.id, { content: 'x' }), { message: `Note with id ${hidden.id} not found` });
  t.type(await refused(context(bob), shown.id, { content: 'x' }), errors.ForbiddenError, 'bob views the PROTECTED study but may not contribute: 403');
  t.type(await refused(context(outsider, ['ORGANIZATION_ADMIN']), orgNote.id, { content: 'x' }), errors.NotFoundError, 'another organization: 404');
  t.type(await refused(context(alice), randomUUID(), { content: 'x' }), errors.NotFoundError);
  const bad = await refused(context(alice), shown.id, { type: 'MEMO', format: 'HTML', content: 5, archived: 'yes' });
  t.type(bad, errors.ValidationError);
  t.same((bad as errors.ValidationError).errors.map((e) => e.field), ['type', 'format', 'content', 'archived']);
  t.match((bad as errors.ValidationError).errors[0].message, 'must be one of NOTE, COMMENT, CONCLUSION, TEMPLATE');
  const versions = await server.sql<{ n: string }>('select count(*) as n from note_version where note_id in (?, ?)', [hidden.id, shown.id]);
  t.equal(Number(versions[0].n), 2, 'refused edits added no version');
  // Organization notes: any member of the organization may edit them.
  t.match(await notes.edit(context(bob), orgNote.id, { content: 'org v2' }), { content: 'org v2', version: 2 });
  const [event] = await server.sql<{ project_id: string | null; organization_user_id: string }>(
    `select project_id, organization_user_id from activity where event_type = 'note.updated' and data->>'noteId' = ?`, [orgNote.id]);
  t.same(event, { project_id: null, organization_user_id: bob.organizationUserId });
});

t.test('the note service: create checks its fields and that the parent exists in the organization', async (t) => {
  const refused = (input: Partial<NewNote>) =>
    notes.create(server.orm.em.fork(), { organizationId: org, parent: { kind: 'project', id: shared.project.id }, type: 'NOTE', format: 'TEXT', content: 'c', ...input }).then(
      () => undefined,
      (e: unknown) => e,
    );
  t.match(await refused({ type: 'MEMO' }), { errors: [{ field: 'type', message: 'must be one of NOTE, COMMENT, CONCLUSION, TEMPLATE' }] });
  t.match(await refused({ format: 'HTML' }), { errors: [{ field: 'format', message: 'must be one of TIPTAP, MARKDOWN, TEXT, QUILL' }] });
  t.match(await refused({ content: undefined }), { errors: [{ field: 'content', message: 'is required' }] });
  t.match(await refused({ parent: { kind: 'project', id: foreign.project.id } }), { message: `Project with id ${foreign.project.id} not found` });
  t.match(await refused({ parent: { kind: 'assay', id: randomUUID() } }), { message: /^Assay with id .* not found$/ });
  t.match(await refused({ parent: { kind: 'organization', id: other } }), { message: `Organization with id ${other} not found` });
  t.match(await refused({ parent: { kind: 'task', id: randomUUID() } }), { errors: [{ field: 'parent' }] });
});

// Edits run truly at once (each its own connection) with each other and with HTTP deletes and
// moves of the parent, and end as one serial order of them would. A few rounds each.
const ROUNDS = 4;
const noteEntries = (noteId: string) =>
  server.sql<{ project_id: string | null; data: Record<string, any> }>(`select project_id, data from activity where event_type = 'note.updated' and data->>'noteId' = ?`, [noteId]);

t.test('concurrent edits of one note: every edit lands, each content on a version of its own', async (t) => {
  for (let i = 0; i < ROUNDS; i++) {
    for (const parent of [{ kind: 'study', id: shared.study.id }, { kind: 'organization', id: org }]) {
      const n = await note(parent, { content: 'v1' });
      const contents = ['a', 'b', 'c', 'd'];
      const edits = await Promise.allSettled([...contents.map((content) => notes.edit(context(alice), n.id, { content })), notes.edit(context(alice), n.id, { type: 'COMMENT' })]);
      t.same(edits.map((e) => e.status), ['fulfilled', 'fulfilled', 'fulfilled', 'fulfilled', 'fulfilled'], edits.map((e) => (e.status === 'rejected' ? String(e.reason) : '')).join(' '));
      const versions = await server.sql<{ version: number; content: string }>('select version, content from note_version where note_id = ? order by version', [n.id]);
      t.same(versions.map((v) => v.version), [1, 2, 3, 4, 5], 'one version per content edit, none lost');
      t.same(versions.slice(1).map((v) => v.content).sort(), contents);
      const [row] = await server.sql<{ current_version: number; type: string }>('select current_version, type from note where id = ?', [n.id]);
      t.same(row, { current_version: 5, type: 'COMMENT' }, 'the latest version is current; the type edit kept');
      const entries = await noteEntries(n.id);
      t.equal(entries.length, 5, 'an entry per edit');
      t.same(entries.filter((e) => e.data.fields.includes('content')).map((e) => e.data.version).sort(), [2, 3, 4, 5], 'each naming its version');
    }
  }
});

t.test('an edit while its study is deleted: made before the delete, or a 404; never half', async (t) => {
  for (let i = 0; i < ROUNDS; i++) {
    const study = await make.study(alice, shared.project.id);
    const n = await note({ kind: 'study', id: study.id }, { content: 'v1' });
    const [edit, deleted] = await Promise.allSettled([notes.edit(context(alice), n.id, { content: 'v2' }), server.delete(api(`/studies/${study.id}`), { key: alice.key })]);
    t.match(deleted, { status: 'fulfilled', value: { status: 204 } });
    if (edit.status === 'rejected') {
      t.type(edit.reason, errors.NotFoundError, 'delete, then edit: the note is not found');
      t.same(await noteEntries(n.id), [], 'and nothing is recorded');
    } else t.equal((await noteEntries(n.id)).length, 1, 'edit, then delete');
    t.same(await server.sql('select note_id from note_version where note_id = ?', [n.id]), [], 'the note went with its study');
  }
});

t.test('notes created in a longer transaction (as a bootstrap file) while their study is deleted: made before the delete, or a 404', async (t) => {
  for (let i = 0; i < ROUNDS; i++) {
    const study = await make.study(alice, shared.project.id);
    const create = () =>
      db.writeTransaction(server.orm.em.fork(), async (em) => {
        const n = await notes.create(em, { organizationId: org, parent: { kind: 'study', id: study.id }, type: 'NOTE', format: 'TEXT', content: 'c' });
        // The rest of the file: the delete arrives before this commits.
        await setTimeout(50);
        return n;
      });
    const [deleted, ...created] = await Promise.allSettled([server.delete(api(`/studies/${study.id}`), { key: alice.key }), create(), create(), create()]);
    t.match(deleted, { status: 'fulfilled', value: { status: 204 } });
    for (const c of created) if (c.status === 'rejected') t.type(c.reason, errors.NotFoundError, 'delete, then create: the study is not found');
    t.same(await server.sql('select id from note where parent_id = ?', [study.id]), [], 'no note of a deleted study');
  }
});

t.test("an edit of an assay's note while its study moves: the entry follows the assay to its new project", async (t) => {
  const away = await make.project(alice);
  for (let i = 0; i < ROUNDS; i++) {
    const study = await make.study(alice, shared.project.id);
    const assay = await make.assay(alice, study.id, admin);
    const n = await note({ kind: 'assay', id: assay.id }, { content: 'v1' });
    const [, moved] = await Promise.all([
      notes.edit(context(alice), n.id, { content: 'v2' }),
      server.request('PATCH', api(`/studies/${study.id}/move`), { key: alice.key, body: { projectId: away.id } }),
    ]);
    t.equal(moved.status, 200, moved.text);
    t.match(await noteEntries(n.id), [{ project_id: away.id }], 'filed in the project the assay is in');
  }
});

t.test('deleting a project, study or assay deletes its notes and their versions', async (t) => {
  const tree = await make.tree(alice, admin);
  const ids: string[] = [];
  for (const { kind, id } of bases(tree)) ids.push((await note({ kind, id })).id);
  await notes.edit(context(alice), ids[2], { content: 'second version' });
  const count = async (table: string, column: string) =>
    Number((await server.sql<{ n: string }>(`select count(*) as n from ${table} where ${column} in (?, ?, ?)`, ids))[0].n);
  t.equal(await count('note', 'id'), 3);
  t.equal(await count('note_version', 'note_id'), 4);
  t.equal((await server.delete(api(`/assays/${tree.assay.id}`), { key: alice.key })).status, 204);
  t.equal(await count('note', 'id'), 2, 'the assay\'s note went with it');
  t.equal(await count('note_version', 'note_id'), 2, 'with its versions');
  t.equal((await server.delete(api(`/projects/${tree.project.id}`), { key: alice.key })).status, 204);
  t.equal(await count('note', 'id'), 0);
  t.equal(await count('note_version', 'note_id'), 0);
});
