// All or nothing: input the import cannot take exits 2 with `labdata: FILE:LINE: reason` and
// writes nothing; --dry-run checks and counts everything and writes nothing; what it reads but
// leaves out (an unknown column, an unknown file) is a warning.
import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createStudy, createProject, startTestServer } from '../../support/server.ts';
import { runCli, runCliInProcess } from '../../cli/labdata-cli.ts';
import { writeExport, type Tamper } from './st-export.ts';
import { counts, generate, SMALL } from './generate.ts';

const server = await startTestServer(t);
const work = mkdtempSync(join(tmpdir(), 'labdata-st-'));
t.teardown(() => rmSync(work, { recursive: true, force: true }));
let exports = 0;

async function exportWith(tamper: Tamper = {}): Promise<string> {
  const dir = join(work, `export-${++exports}`);
  await writeExport(dir, generate(SMALL), 'first', tamper);
  return dir;
}
const env = { LABDATA_DATABASE_URL: server.databaseUrl };
const run = (path: string, org: string, ...extra: string[]) => runCliInProcess(['import', 'study-tracker', path, '--organization', org, ...extra], env);

const TABLES = ['app_user', 'organization_user', 'project', 'project_member', 'study', 'assay', 'assay_type', 'task', 'note', 'note_version', 'external_link',
  'keyword', 'collaborator', 'study_collection', 'study_relationship', 'activity', 'study_tracker_map', 'visibility_count', 'record_count'];
async function snapshot(): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const table of TABLES) out[table] = Number((await server.sql<{ n: string }>(`select count(*) as n from ${table}`))[0].n);
  return out;
}

const org = await server.organization('Not yet moved in');
// A study made here holds a code the export also uses.
const taken = await server.organization('Code taken');
const owner = await server.member(taken);
const project = await createProject(server, owner, 'PUBLIC');
const clash = await createStudy(server, owner, project.id);
await server.put(`/api/v1/studies/${clash.id}`, { code: 'pr1-10001' }, { key: owner.key });

/** Replaces the first occurrence of `from` in a file's text. */
const replace = (from: string, to: string) => (text: string) => {
  if (!text.includes(from)) throw new Error(`fixture: "${from}" not found`);
  return text.replace(from, to);
};

t.test('input it cannot import: exit 2, one FILE:LINE reason, nothing written', async (t) => {
  const cases: [string, Tamper, RegExp][] = [
    ['a missing file', { omit: ['studies.csv'] }, /^labdata: studies\.csv:0: missing from the export$/],
    ['a missing column it needs', { edit: { 'programs.csv': replace('"Code"', '"ProgramCode"') } }, /^labdata: programs\.csv:1: missing column "Code"$/],
    ['a reference to a row that is not there', { edit: { 'assays.csv': replace('"1","1","1","PR1-10001-001"', '"1","1","999","PR1-10001-001"') } }, /^labdata: assays\.csv:2: no study with ID 999 in studies\.csv$/],
    ['a malformed date', { edit: { 'studies.csv': replace('"2021-01-05T10:30:00+02:00"', '"2021-01-32T10:30:00+02:00"') } }, /^labdata: studies\.csv:2: StartDate "2021-01-32T10:30:00\+02:00" is not a date/],
    ['a date in another format', { edit: { 'programs.csv': replace('"2021-01-04T11:30:00+02:00"', '"04/01/2021"') } }, /^labdata: programs\.csv:2: CreatedAt "04\/01\/2021" is not a date/],
    ['an unknown status', { edit: { 'studies.csv': replace('"ACTIVE"', '"RUNNING"') } }, /^labdata: studies\.csv:2: Status "RUNNING" is not one of IN_PLANNING, ACTIVE, COMPLETE, ON_HOLD, NEEDS_ATTENTION, DEPRIORITIZED$/],
    ['a task of an assay that is not there (streamed file)', { edit: { 'assay_tasks.csv': replace('"1","1","COMPLETE"', '"1","9999","COMPLETE"') } }, /^labdata: assay_tasks\.csv:2: no assay with ID 9999 in assays\.csv$/],
    ['a malformed date in activity.csv', { edit: { 'activity.csv': replace('"2021-01-04T11:30:00+02:00"', '"yesterday"') } }, /^labdata: activity\.csv:\d+: Date "yesterday" is not a date/],
    ['an activity row of a user not in users.csv', { edit: { 'activity.csv': replace('"NEW_COLLABORATOR","{""collaborator"":{""id"":1,""label"":""Charles River""}}","1"', '"NEW_COLLABORATOR","{""collaborator"":{""id"":1,""label"":""Charles River""}}","77"') } }, /^labdata: activity\.csv:\d+: no user with ID 77 in users\.csv$/],
    ['the same id twice', { edit: { 'keywords.csv': (text) => text + '"1","Again","Gene"\n' } }, /^labdata: keywords\.csv:5: ID 1 appears twice \(first on line 2\)$/],
    ['broken CSV (a quote left open)', { edit: { 'users.csv': (text) => text + '"9","x,"broken\n' } }, /^labdata: users\.csv:8: not CSV as the export writes it/],
    ['a row with a field too many', { edit: { 'keywords.csv': (text) => text + '"9","x","y","z"\n' } }, /^labdata: keywords\.csv:5: 4 fields where the header has 3$/],
    ['invalid JSON in Fields', { edit: { 'assays.csv': replace('"{""plateId""', '"{plateId""') } }, /^labdata: assays\.csv:2: Fields is not valid JSON$/],
  ];
  const before = await snapshot();
  for (const [what, tamper, reason] of cases) {
    const res = await run(await exportWith(tamper), org);
    t.equal(res.code, 2, `${what}: exit 2 (${res.stderr.split('\n').filter((l) => l.startsWith('labdata')).join(' ')})`);
    t.equal(res.stdout, '', `${what}: nothing on stdout`);
    t.equal(res.reasons.length, 1, `${what}: one reason`);
    t.match(res.reasons[0] ?? '', reason, what);
  }
  t.same(await snapshot(), before, 'the database is as it was');
});

t.test('a code the organization already uses for another study: exit 2 naming the row, nothing written', async (t) => {
  const before = await snapshot();
  const res = await run(await exportWith(), taken);
  t.equal(res.code, 2);
  t.match(res.reasons, [new RegExp(`^labdata: studies\\.csv:2: code "PR1-10001" is used here by another study \\(${clash.id}\\), not from this export$`)]);
  t.same(await snapshot(), before);
});

t.test('operator mistakes: a PATH that is not there or not an export, a bad option, an unknown source or organization', async (t) => {
  const notZip = join(work, 'not-a.zip');
  writeFileSync(notZip, 'hello');
  const cases: [string[], RegExp][] = [
    [['import', 'study-tracker', join(work, 'nope'), '--organization', org], /^labdata: .*nope: no such file or folder$/],
    [['import', 'study-tracker', notZip, '--organization', org], /^labdata: .*not-a\.zip: not a folder or a readable \.zip file/],
    [['import', 'study-tracker', work, '--organization', org, '--visibility', 'SECRET'], /^labdata: import: --visibility must be one of PUBLIC, PROTECTED, PRIVATE$/],
    [['import', 'benchling', work, '--organization', org], /^labdata: import: unknown source "benchling" \(known: study-tracker\)$/],
    [['import', 'study-tracker', work, '--organization', '00000000-0000-4000-8000-000000000000'], /^labdata: import: unknown organization 00000000-0000-4000-8000-000000000000$/],
    [['import', 'study-tracker', work, '--organization', 'acme'], /^labdata: import: --organization must be a UUID$/],
    [['import', 'study-tracker', work], /^labdata: import: --organization is required$/],
  ];
  for (const [args, reason] of cases) {
    const res = await runCliInProcess(args, env);
    t.equal(res.code, 2, args.join(' '));
    t.match(res.reasons, [reason], args.join(' '));
  }
});

t.test('--dry-run reads and checks everything, reports what it would do, and writes nothing', async (t) => {
  const before = await snapshot();
  const dry = await run(await exportWith(), org, '--dry-run');
  t.equal(dry.code, 0, dry.stderr);
  const expected = counts(SMALL);
  t.match(dry.json.created, { projects: expected.programs, studies: expected.studies, assays: expected.assays, tasks: expected.tasks, activity: expected.activity, users: 7, notes: 3 });
  t.ok(dry.json.created.projectMembers > 0);
  t.same(await snapshot(), before, 'nothing written');
  const real = await run(join(work, `export-${exports}`), org);
  t.same(real.json.created, dry.json.created, 'the real run does what the dry run said');
  const broken = await run(await exportWith({ edit: { 'assays.csv': replace('"1","1","1","PR1-10001-001"', '"1","1","999","PR1-10001-001"') } }), org, '--dry-run');
  t.equal(broken.code, 2, 'a dry run finds what a run would refuse');
});

t.test('an unknown column, an unknown file: warnings, and the rest is imported; --visibility sets the new projects', async (t) => {
  const dir = await exportWith({
    edit: {
      'keywords.csv': (text) => text.split('\n').map((line, i) => (line ? `${line},${i === 0 ? '"Color"' : '"red"'}` : line)).join('\n'),
    },
  });
  writeFileSync(join(dir, 'datasets.csv'), '"ID"\n"1"\n');
  const other = await server.organization('Private lab');
  const res = await run(dir, other, '--visibility', 'PRIVATE');
  t.equal(res.code, 0, res.stderr);
  t.match(res.json.warnings, [{ file: 'datasets.csv', line: 0, message: 'unknown file: left out' }, { file: 'keywords.csv', line: 1, message: 'unknown column "Color": left out' }]);
  t.equal(res.json.created.keywords, 3);
  const visibilities = await server.sql<{ visibility: string }>('select distinct visibility from project where organization_id = ?', [other]);
  t.same(visibilities, [{ visibility: 'PRIVATE' }]);
});

t.test('the launcher: exit status 2 and the one-line reason on stderr, nothing on stdout', async (t) => {
  const res = await runCli(['import', 'study-tracker', await exportWith({ omit: ['activity.csv'] }), '--organization', org], env);
  t.equal(res.code, 2);
  t.equal(res.stdout, '');
  t.same(res.reasons, ['labdata: activity.csv:0: missing from the export']);
});

t.test('two imports of one export into one organization at once: one moves it in, the other finds it there', async (t) => {
  const lab = await server.organization('Racing lab');
  const dir = await exportWith();
  const [a, b] = await Promise.all([run(dir, lab), run(dir, lab)]);
  t.same([a.code, b.code], [0, 0], `${a.stderr}${b.stderr}`);
  const expected = counts(SMALL);
  const createdStudies = [a.json.created.studies, b.json.created.studies].sort();
  t.same(createdStudies, [0, expected.studies], 'one run created the studies, the other none');
  t.equal(a.json.created.activity + b.json.created.activity, expected.activity);
  const [{ n }] = await server.sql<{ n: string }>('select count(*) as n from study where organization_id = ?', [lab]);
  t.equal(Number(n), expected.studies, 'no duplicates');
});
