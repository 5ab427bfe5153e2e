// `labdata import study-tracker PATH --organization ORG_ID`: a Study Tracker export, written as
// DataExportService writes it (st-export.ts, both versions of the format), moves in whole; the
// result is read back through the REST API; a second run creates nothing; a later export creates
// the new records and updates the changed ones.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestServer } from '../../support/server.ts';
import { runCliInProcess } from '../../cli/labdata-cli.ts';
import { writeExport, zipExport, type Version } from './st-export.ts';
import { at, counts, generate, programName, SMALL, studyName, type Sizes } from './generate.ts';

const server = await startTestServer(t);
const work = mkdtempSync(join(tmpdir(), 'labdata-st-'));
t.teardown(() => rmSync(work, { recursive: true, force: true }));
let exports = 0;

/** Writes an export (a folder, or a .zip of it as Study Tracker zips it) and returns its path. */
async function exportOf(version: Version, sizes: Sizes = SMALL, edit: (m: ReturnType<typeof generate>) => void = () => {}, zip = false): Promise<string> {
  const dir = join(work, `export-${++exports}`);
  const model = generate(sizes);
  edit(model);
  await writeExport(dir, model, version);
  if (!zip) return dir;
  await zipExport(dir, `data-export-${exports}`, `${dir}.zip`);
  return `${dir}.zip`;
}

const run = (path: string, org: string, ...extra: string[]) =>
  runCliInProcess(['import', 'study-tracker', path, '--organization', org, ...extra], { LABDATA_DATABASE_URL: server.databaseUrl });

const org = await server.organization('Moved-in lab');
const admin = await server.admin(org);
const get = async (path: string) => {
  const res = await server.get(`/api/v1${path}`, { key: admin.key });
  if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${res.text}`);
  return res.body;
};
const all = async (path: string) => (await get(`${path}${path.includes('?') ? '&' : '?'}size=200`)).content as any[];
const n = SMALL;
const expected = counts(n);
const first = await run(await exportOf('first'), org);

t.test('a first-version export (folder) moves in: counts per kind, JSON on stdout, progress on stderr', async (t) => {
  t.equal(first.code, 0, first.stderr);
  t.same(Object.keys(first.json), ['created', 'updated', 'unchanged', 'warnings']);
  t.match(first.json.created, {
    users: 7, // six users and the import's own ("Study Tracker import")
    collaborators: 2,
    keywords: 3,
    assayTypes: 2,
    projects: expected.programs,
    studies: expected.studies,
    assays: expected.assays,
    tasks: expected.tasks,
    notes: 3,
    externalLinks: 7,
    studyRelationships: 2,
    studyCollections: 2,
    activity: expected.activity,
  });
  t.ok(first.json.created.projectMembers > 0);
  for (const kind of Object.keys(first.json.created)) t.equal(first.json.updated[kind] + first.json.unchanged[kind], 0, `${kind}: nothing there before`);
  t.match(first.stderr, /import 10\/10 done/, 'progress on stderr');
  t.equal(first.reasons.length, 0);
  t.match(first.json.warnings, [
    { file: 'storage_drive_folders.csv', line: 0, message: /no web address/ },
    { file: 'eln_folders.csv', line: 0, message: /no eln_folders.csv/ },
    { file: 'users.csv', line: 7, message: /no e-mail address/ },
  ]);
});

t.test('programs become projects: code, name, description kept, inactive archived, PUBLIC by default', async (t) => {
  const projects = await all('/projects');
  t.equal(projects.length, n.programs);
  const p1 = projects.find((p) => p.code === 'PR1');
  t.match(p1, { name: programName(1), description: 'Program 1 of the lab, "quoted", with, commas', visibility: 'PUBLIC', status: 'ACTIVE', archived: false, createdAt: at(1).toISOString(), updatedAt: at(2).toISOString() });
  const p2 = projects.find((p) => p.code === 'PR2');
  t.match(p2, { name: 'Program 2', description: 'Program 2', archived: true }, 'no description: the name stands in; Active=false: archived');
  const [creator] = await server.sql<{ email: string }>('select u.email from organization_user ou join app_user u on u.id = ou.user_id where ou.id = ?', [p1.createdById]);
  t.equal(creator.email, 'user2@lab.example', 'the creator is the organization user matched by e-mail');
});

t.test('studies and assays keep codes, dates, statuses (mapped), owners and collaborators', async (t) => {
  const studies = await all('/studies?sort=createdAt,asc');
  t.equal(studies.length, expected.studies);
  const s1 = studies.find((s) => s.code === 'PR1-10001');
  t.match(s1, { name: studyName(1), status: 'ACTIVE', startDate: at(24).toISOString(), createdAt: at(24).toISOString(), archived: false, collaboratorId: null });
  const byCode = (code: string) => studies.find((s) => s.code === code);
  // Study ids cycle through the statuses: id % 6 → IN_PLANNING, ACTIVE, COMPLETE, ON_HOLD, NEEDS_ATTENTION, DEPRIORITIZED.
  t.same(['PR1-10002', 'PR1-10003', 'PR2-10004', 'PR2-10005', 'PR2-10006'].map((c) => byCode(c).status), ['COMPLETE', 'ON_HOLD', 'ON_HOLD', 'DEACTIVATED', 'CREATED']);
  const cro = (await all('/collaborators')).find((c) => c.label === 'Charles River');
  t.match(cro, { code: 'CRL', organizationName: 'Charles River Laboratories, Inc.', organizationLocation: 'Wilmington, MA', contactEmail: 'jdoe@crl.example', active: true });
  t.equal(byCode('PR1-10003').collaboratorId, cro.id, "a study's collaborator");
  const projects = await all('/projects');
  t.equal(s1.projectId, projects.find((p) => p.code === 'PR1').id);

  const assays = await all('/assays');
  t.equal(assays.length, expected.assays);
  const a1 = assays.find((a) => a.code === 'PR1-10001-001');
  t.match(a1, { name: 'ELISA, "plate 1"\nrepeat', studyId: s1.id, status: 'COMPLETE' });
  t.same(a1.values, {
    plateId: 'PL-1', notes: 'first line\nsecond, "quoted"', replicates: 3, concentration: 2.5, readOn: new Date(Date.UTC(2021, 0, 4, 8, 31)).toISOString(),
    blankCorrected: true, signal: 'High', rawData: { name: 'plate.csv', path: '/data/plate.csv', url: 'https://files.lab.example/1/plate.csv' }, oldReader: 'Synergy',
  }, 'Fields → typed values (a FLOAT given as text is a number, a DATE timestamp a date-time; an inactive field keeps its value)');
  // The first version names no creator of an assay (a toString()): its owner stands in.
  const [owner] = await server.sql<{ email: string }>('select u.email from organization_user ou join app_user u on u.id = ou.user_id where ou.id = ?', [a1.createdById]);
  t.equal(owner.email, 'user4@lab.example');
});

t.test('assay types: every field type, options, required, defaults; task templates with their forms', async (t) => {
  const types = await all('/assay-types');
  const elisa = types.find((x) => x.name === 'ELISA, quantitative');
  t.match(elisa, { description: 'Sandwich ELISA "v2"', status: 'ACTIVE' });
  t.same(elisa.fields.map((f: any) => [f.name, f.type, f.required, f.defaultValue]), [
    ['plateId', 'TEXT', true, null], ['notes', 'LONG_TEXT', false, 'none yet'], ['replicates', 'INTEGER', false, 3], ['concentration', 'NUMBER', false, null],
    ['readOn', 'DATE', false, null], ['blankCorrected', 'BOOLEAN', false, false], ['signal', 'CHOICE', false, 'Medium'], ['rawData', 'FILE', false, null],
  ], 'ordered by FieldOrder; the inactive field left out of the type');
  t.same(elisa.fields.find((f: any) => f.name === 'signal').options, ['Low', 'Medium', 'High']);
  t.same(elisa.tasks.map((x: any) => [x.label, x.order, x.fields.map((f: any) => [f.name, f.type, f.required])]), [
    ['Coat plate, "overnight"', 1, [['approved', 'BOOLEAN', true]]],
    ['Read plate', 2, []],
  ]);
  t.equal(types.find((x) => x.name === 'Generic').status, 'INACTIVE');
});

t.test('assay tasks: status, assignee, due date, order, form and data', async (t) => {
  const a1 = (await all('/assays')).find((a) => a.code === 'PR1-10001-001');
  const tasks = (await get(`/assays/${a1.id}/tasks`)).content;
  t.same(tasks.map((x: any) => [x.label, x.order, x.status]), [['Coat plate, "overnight"', 1, 'COMPLETE'], ['Step 2', 2, 'INCOMPLETE']]);
  t.match(tasks[0], { data: { approved: true }, dueDate: at(24 + 72).toISOString(), completedAt: at(24 + 5).toISOString() });
  t.same(tasks[0].fields.map((f: any) => f.name), ['approved']);
  t.same(tasks[1].data, {}, 'a task without data (null in the first version) has none');
  t.equal(tasks[1].fields.length, 0);
});

t.test('comments and conclusions, links, relationships, collections, keywords', async (t) => {
  const s1 = (await all('/studies')).find((s) => s.code === 'PR1-10001');
  const s2 = (await all('/studies')).find((s) => s.code === 'PR1-10002');
  const notes = (await get(`/studies/${s1.id}/notes`)).content;
  t.same(notes.map((x: any) => [x.type, x.format, x.content]).sort(), [
    ['COMMENT', 'TEXT', 'First comment, with "quotes"\nand a second line'],
    ['CONCLUSION', 'QUILL', '<p>It "works", mostly.</p>\n<p>Next: repeat.</p>'],
  ]);
  const links = (await get(`/studies/${s1.id}/external-links`)).content.map((l: any) => [l.label, l.url]).sort();
  t.same(links, [
    ['Git repository: study-1-analysis', 'https://git.lab.example/oncology/study-1-analysis'],
    ['Protocol, "final"', 'https://wiki.lab.example/protocols/1'],
    ['Storage folder: Study 1, "raw"', 'https://lab.egnyte.com/navigate/folder/def'],
  ]);
  const unlabelled = (await get(`/studies/${s2.id}/external-links`)).content;
  t.same(unlabelled.map((l: any) => [l.label, l.url]), [['https://wiki.lab.example/2', 'https://wiki.lab.example/2']], 'a label written as "null": the URL stands in');
  t.same((await get(`/studies/${s1.id}/relationships`)).content.map((r: any) => [r.type, r.targetStudyId]), [['IS_PARENT_OF', s2.id]]);
  t.same((await get(`/studies/${s2.id}/relationships`)).content.map((r: any) => [r.type, r.targetStudyId]), [['IS_CHILD_OF', s1.id]]);
  const collections = await get('/study-collections');
  const shared = (collections.content ?? collections).find((c: any) => c.name === 'Shared picks, "2023"');
  t.equal(shared.visibility, 'PUBLIC');
  const privateOne = await server.sql<{ visibility: string }>(`select visibility from study_collection where organization_id = ? and name = 'My list'`, [org]);
  t.same(privateOne, [{ visibility: 'PRIVATE' }], 'not shared: private to its creator');
  t.same((await get(`/study-collections/${shared.id}`)).studies.map((s: any) => s.id).sort(), [s1.id, s2.id].sort());
  t.same((await all('/keywords')).map((k) => [k.value, k.category]), [['BRCA1', 'Gene'], ['CRISPR', 'Technique'], ['Toxicology', null]]);
});

t.test('users: organization users matched by e-mail, with their names; study and assay users are project members', async (t) => {
  const ous = await all('/organization-users');
  const byEmail = new Map(ous.map((o) => [o.user.email, o]));
  t.match(byEmail.get('user1@lab.example'), { status: 'ACTIVE', roles: ['ORGANIZATION_USER'], user: { displayName: 'Ada Lovelace, PhD' } });
  t.match(byEmail.get('user5@lab.example'), { status: 'INACTIVE' }, 'inactive in Study Tracker');
  t.ok(byEmail.get('legacy.admin@study-tracker.invalid'), 'a user without e-mail gets one that says so');
  const p1 = (await all('/projects')).find((p) => p.code === 'PR1');
  const members = await server.sql<{ email: string }>(
    `select u.email from project_member pm join organization_user ou on ou.id = pm.organization_user_id join app_user u on u.id = ou.user_id where pm.project_id = ? order by 1`, [p1.id]);
  t.ok(members.length >= 4, 'owners, users and creators of its studies and assays');
});

t.test('activity: dotted types on the right records, categories, original dates and users', async (t) => {
  const s1 = (await all('/studies')).find((s) => s.code === 'PR1-10001');
  const feed = (await get(`/studies/${s1.id}/activity?size=100`)).content;
  const created = feed.find((a: any) => a.eventType === 'study.created');
  t.match(created, { date: at(24).toISOString(), projectId: s1.projectId, studyId: s1.id, data: { name: studyName(1), studyTracker: { id: 10_000_001, eventType: 'NEW_STUDY' } } });
  t.match(feed.find((a: any) => a.eventType === 'study.status_changed'), { data: { oldStatus: 'CREATED', newStatus: 'ACTIVE' } }, 'IN_PLANNING → CREATED');
  const byAssay = feed.filter((a: any) => a.assayId);
  t.ok(byAssay.length > 0, 'assay events sit under their study and project too');
  t.ok(byAssay.some((a: any) => a.eventType === 'study_tracker.file_uploaded'), 'no counterpart: history under study_tracker.<event>');
  const research = await all('/activity?category=RESEARCH');
  t.ok(research.some((a: any) => a.eventType === 'assay.status_changed' && a.data.newStatus === 'ON_HOLD' && a.assayId), 'NEEDS_ATTENTION → ON_HOLD');
  const org = await all('/activity?category=ADMINISTRATIVE');
  t.ok(org.some((a: any) => a.eventType === 'collaborator.created' && a.projectId === null));
  t.ok(org.some((a: any) => a.eventType === 'study_tracker.new_user'));
  const [user] = await server.sql<{ email: string }>('select u.email from organization_user ou join app_user u on u.id = ou.user_id where ou.id = ?', [created.organizationUserId]);
  t.equal(user.email, 'user2@lab.example', 'the user who did it');
});

t.test('page totals equal count(*) after the import', async (t) => {
  for (const [path, table] of [['/projects', 'project'], ['/studies', 'study'], ['/assays', 'assay'], ['/activity', 'activity']]) {
    const [{ count }] = await server.sql<{ count: string }>(`select count(*) from ${table} where organization_id = ?`, [org]);
    t.equal((await get(`${path}?size=1`)).totalElements, Number(count), path);
  }
});

t.test('a second run of the same export creates nothing', async (t) => {
  const again = await run(join(work, 'export-1'), org);
  t.equal(again.code, 0, again.stderr);
  for (const [kind, value] of Object.entries(again.json.created)) t.equal(value, 0, `created.${kind}`);
  for (const [kind, value] of Object.entries(again.json.updated)) t.equal(value, 0, `updated.${kind}`);
  t.match(again.json.unchanged, { projects: expected.programs, studies: expected.studies, assays: expected.assays, tasks: expected.tasks, activity: expected.activity });
});

t.test('a later export (the 1.0.2 hotfix, zipped) creates the new records and updates the changed ones', async (t) => {
  const larger = { ...SMALL, programs: 3 };
  const later = await exportOf('1.0.2', larger, (m) => {
    m.programs[0].name = 'Oncology (renamed)';
    m.comments[0].text = 'Edited comment';
    m.keywords.push({ id: 4, keyword: 'hERG', category: 'Target' });
  }, true);
  const res = await run(later, org);
  t.equal(res.code, 0, res.stderr);
  const grown = counts(larger);
  t.match(res.json.created, { projects: 1, studies: grown.studies - expected.studies, assays: grown.assays - expected.assays, tasks: grown.tasks - expected.tasks, keywords: 1, notes: 0, users: 0 });
  t.equal(res.json.created.activity, grown.activity - expected.activity);
  t.match(res.json.updated, { projects: 1, notes: 1, studies: 0, activity: 0 });
  // The hotfix names an assay's creator (the first version did not): every assay of the first
  // export changes, and so do the tasks that name no creator of their own (every fourth: theirs is the assay's).
  t.equal(res.json.updated.assays, expected.assays);
  t.equal(res.json.updated.tasks, expected.tasks / 4);
  t.equal(res.json.created.externalLinks, 1, 'the notebook folder: the 1.0.2 export has eln_folders.csv');
  t.match(res.json.unchanged, { studies: expected.studies, tasks: expected.tasks - expected.tasks / 4, activity: expected.activity, projects: 1 });

  const p1 = (await all('/projects')).find((p) => p.code === 'PR1');
  t.equal(p1.name, 'Oncology (renamed)');
  const s1 = (await all('/studies')).find((s) => s.code === 'PR1-10001');
  const comment = (await get(`/studies/${s1.id}/notes`)).content.find((x: any) => x.type === 'COMMENT');
  t.equal(comment.content, 'Edited comment', 'a changed comment gets a new version');
  const a1 = (await all('/assays')).find((a) => a.code === 'PR1-10001-001');
  const [creator] = await server.sql<{ email: string }>('select u.email from organization_user ou join app_user u on u.id = ou.user_id where ou.id = ?', [a1.createdById]);
  t.equal(creator.email, 'user2@lab.example', 'the hotfix writes the creator as an id');
  t.ok((await get(`/studies/${s1.id}/external-links`)).content.some((l: any) => l.label === 'Notebook folder: Study 1 notebook'));
  for (const [path, table] of [['/projects', 'project'], ['/studies', 'study'], ['/assays', 'assay'], ['/activity', 'activity']]) {
    const [{ count }] = await server.sql<{ count: string }>(`select count(*) from ${table} where organization_id = ?`, [org]);
    t.equal((await get(`${path}?size=1`)).totalElements, Number(count), `${path}: total = count(*)`);
  }
  const rerun = await run(later, org);
  for (const [kind, value] of Object.entries(rerun.json.created)) t.equal(value, 0, `then again: created.${kind}`);
});
