// `labdata new-plugin NAME` (issue 13, point 4): a new resource plugin starts as a renamed copy
// of plugins/keywords that type-checks and loads like any third-party plugin.
import t from 'tap';
import { execFile } from 'node:child_process';
import { mkdtempSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { symlinkSync } from 'node:fs';
import { promisify } from 'node:util';
import { projectRoot, runCli } from './labdata-cli.ts';
import { startTestServer } from '../support/server.ts';

const env = { LABDATA_DATABASE_URL: 'postgres://nobody@127.0.0.1:9/none', LABDATA_PORT: '0' };
// Inside the repository (node_modules resolve from there), in the git-ignored scratch folder.
mkdirSync(join(projectRoot, '.scratch'), { recursive: true });
const scratch = mkdtempSync(join(projectRoot, '.scratch/new-plugin-'));
t.teardown(() => rmSync(scratch, { recursive: true, force: true }));
const into = relative(projectRoot, scratch);

t.test('--help explains the verb', async (t) => {
  const res = await runCli(['new-plugin', '--help'], env);
  t.equal(res.code, 0);
  t.match(res.stdout, /^usage: labdata new-plugin NAME/);
  t.match(res.stdout, /plugins\/keywords/);
  t.match(res.stdout, /\nexamples:\n {2}labdata new-plugin instruments/);
  t.match((await runCli(['--help'], env)).stdout, /\n {2}new-plugin NAME/, 'listed in the top-level help');
});

t.test('a bad name or an existing folder: one line, exit 2, nothing written', async (t) => {
  const cases: [string[], RegExp][] = [
    [['new-plugin', 'Instruments', '--into', into], /^labdata: new-plugin: "Instruments" is not a plugin name: use a kebab-case plural/],
    [['new-plugin', 'instrument', '--into', into], /is not a plugin name/],
    [['new-plugin', '../evil', '--into', into], /is not a plugin name/],
    [['new-plugin', 'keywords'], /^labdata: new-plugin: plugins\/keywords already exists/],
    [['new-plugin', 'species', '--into', into], /^labdata: new-plugin: "species" is the same in the singular: pick a name with a distinct singular/],
    [['new-plugin', 'projects', '--into', into], /^labdata: new-plugin: "projects" is the name of a built-in plugin/],
    [['new-plugin', 'activities', '--into', into], /^labdata: new-plugin: "activities" would create the table activity, which the kernel already has/],
    [['new-plugin', 'note-versions', '--into', into], /^labdata: new-plugin: "note-versions" would create the table note_version, which the notes plugin already has/],
  ];
  for (const [args, reason] of cases) {
    const res = await runCli(args, env);
    t.equal(res.code, 2, `${args.join(' ')}: exit 2`);
    t.equal(res.stdout, '');
    t.equal(res.stderr.split('\n').filter(Boolean).length, 1, 'one line');
    t.match(res.stderr, reason);
  }
  t.same(readdirSync(scratch), [], 'nothing generated');
});

t.test('the generated plugin type-checks and serves its resource', async (t) => {
  const res = await runCli(['new-plugin', 'lab-devices', '--into', into], env);
  t.equal(res.code, 0, res.stderr);
  t.same(res.json, { plugin: 'lab-devices', folder: `${into}/lab-devices` });
  const folder = join(scratch, 'lab-devices');
  t.same(readdirSync(folder).sort(), readdirSync(join(projectRoot, 'plugins/keywords')).sort(), 'the same files as plugins/keywords');
  for (const file of readdirSync(folder)) t.notMatch(readFileSync(join(folder, file), 'utf8'), /keyword/i, `${file}: renamed throughout`);
  t.equal((await runCli(['new-plugin', 'lab-devices', '--into', into], env)).code, 2, 'a second run refuses the folder');

  writeFileSync(join(scratch, 'tsconfig.json'), JSON.stringify({ extends: '../../tsconfig.json', include: ['lab-devices'] }));
  const tsc = join(projectRoot, 'node_modules/typescript/bin/tsc');
  const checked = await promisify(execFile)(process.execPath, [tsc, '-p', join(scratch, 'tsconfig.json')], { cwd: projectRoot }).then(
    () => '',
    (err: { stdout?: string }) => err.stdout ?? String(err),
  );
  t.equal(checked, '', 'tsc reports nothing');

  const server = await startTestServer(t, { plugins: ['users', folder] });
  t.ok(server.kernel.plugins.some((p) => p.name === 'lab-devices'), 'loaded by path like a third-party plugin');
  const member = await server.member(await server.organization());
  const created = await server.post('/api/v1/lab_devices', { value: ' Centrifuge ' }, { key: member.key });
  t.equal(created.status, 201, created.text);
  t.equal(created.body.value, 'Centrifuge');
  const list = await server.get('/api/v1/lab_devices', { key: member.key });
  t.same(list.body.content.map((d: { id: string }) => d.id), [created.body.id]);
  const [event] = await server.sql(`select category from activity where event_type = 'lab_device.created'`);
  t.same(event, { category: 'ADMINISTRATIVE' });
});

t.test('a name starting with a vowel gets "an" where the template says "a keyword"', async (t) => {
  const res = await runCli(['new-plugin', 'instruments', '--into', into], env);
  t.equal(res.code, 0, res.stderr);
  const service = readFileSync(join(scratch, 'instruments', 'service.ts'), 'utf8');
  t.match(service, 'An instrument with value');
  t.notMatch(service, /\bA instrument/);
});

t.test('"a utensil", "a unit": a "u" read as "you" keeps "a"', async (t) => {
  const res = await runCli(['new-plugin', 'utensils', '--into', into], env);
  t.equal(res.code, 0, res.stderr);
  t.match(readFileSync(join(scratch, 'utensils', 'service.ts'), 'utf8'), 'A utensil with value');
});

t.test('irregular plurals get their real singular: "analyses" holds an analysis, "lab-indices" a lab index', async (t) => {
  for (const [name, singular] of [['analyses', 'analysis'], ['lab-indices', 'lab_index']]) {
    const res = await runCli(['new-plugin', name, '--into', into], env);
    t.equal(res.code, 0, res.stderr);
    const migrations = readFileSync(join(scratch, name, 'migrations.ts'), 'utf8');
    t.match(migrations, `create table ${singular} `, `${name}: the table is ${singular}`);
  }
});

t.test('--singular names the singular where the inflection table errs ("caches" would hold a "cach")', async (t) => {
  const res = await runCli(['new-plugin', 'caches', '--singular', 'cache', '--into', into], env);
  t.equal(res.code, 0, res.stderr);
  t.match(readFileSync(join(scratch, 'caches', 'migrations.ts'), 'utf8'), 'create table cache ');
  const bad = await runCli(['new-plugin', 'cookies', '--singular', 'Cookie!', '--into', into], env);
  t.equal(bad.code, 2);
  t.match(bad.stderr, /^labdata: new-plugin: --singular "Cookie!" is not a kebab-case name/);
});

t.test('outside the checkout, the plugin imports the package entry points and loads through node_modules/labdata', async (t) => {
  const outside = mkdtempSync(join(tmpdir(), 'labdata-plugin-'));
  t.teardown(() => rmSync(outside, { recursive: true, force: true }));
  const res = await runCli(['new-plugin', 'instruments', '--into', outside], env);
  t.equal(res.code, 0, res.stderr);
  const folder = join(outside, 'instruments');
  const imports = readdirSync(folder)
    .filter((f) => f.endsWith('.ts'))
    .flatMap((f) => [...readFileSync(join(folder, f), 'utf8').matchAll(/from '([^']+)'/g)].map((m) => m[1]));
  t.same([...new Set(imports.filter((i) => !i.startsWith('./')))].sort(), ['labdata/plugin-api', 'labdata/records'], 'package entry points only');
  // As docs/plugins.md says: the checkout is the package `labdata` in a node_modules above the plugin.
  mkdirSync(join(outside, 'node_modules'));
  symlinkSync(projectRoot, join(outside, 'node_modules/labdata'));
  const server = await startTestServer(t, { plugins: ['users', folder] });
  const member = await server.member(await server.organization());
  t.equal((await server.post('/api/v1/instruments', { value: 'Balance' }, { key: member.key })).status, 201);
});
