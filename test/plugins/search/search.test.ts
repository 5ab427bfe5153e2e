// GET /api/v1/search and the `search` tool: the contract (issue 30), words (stemming, plain
// names, phrases, or, -excluded), codes (exact first, prefix), archived, types, paging with exact
// totals, snippets, validation. Permissions and freshness: permissions.test.ts.
import t from 'tap';
import { startTestServer, testCast } from '../../support/server.ts';
import { callTool, connectMcp, expectToolMatchesRest, resultText } from '../../support/mcp.ts';
import { records } from '../external-links/records.ts';
import { NoteService } from '../../../plugins/notes/service.ts';

const server = await startTestServer(t);
const { org, admin, alice, bob } = await testCast(server);
const make = records(server);
const notes = new NoteService(server.kernel.services);

async function created(path: string, body: unknown, key = alice.key) {
  const res = await server.post('/api/v1' + path, body, { key });
  if (res.status !== 201) throw new Error(`POST ${path}: ${res.status} ${res.text}`);
  return res.body as { id: string };
}

const project = await created('/projects', {
  code: 'KIN-001', name: 'Kinase profiling', description: 'Selectivity of kinase inhibitors against the hERG channel', visibility: 'PROTECTED',
});
const herg = await created('/studies', { projectId: project.id, code: 'STUDY-0142', name: 'hERG potency', description: 'Dose response of compounds in HEK cells' });
const solubility = await created('/studies', { projectId: project.id, code: 'STUDY-0143', name: 'Solubility', description: 'Kinetic solubility in buffer' });
const later = await created('/studies', { projectId: project.id, code: 'STUDY-0200', name: 'Clearance', description: 'Microsomal clearance' });
const type = await created('/assay-types', { name: 'Electrophysiology', status: 'ACTIVE' }, admin.key);
const patch = await created('/assays', { studyId: herg.id, assayTypeId: type.id, code: 'ASSAY-0142-A', name: 'Patch clamp', description: 'Whole-cell recordings' });
// A note that names the study's code more often than anything else does.
const conclusion = await notes.create(server.orm.em.fork(), {
  organizationId: org, parent: { kind: 'study', id: herg.id }, type: 'CONCLUSION', format: 'MARKDOWN',
  content: '# Conclusion of STUDY-0142\nThe hERG study last spring concluded that compound AZD-1 blocks the channel. STUDY-0142 STUDY-0142',
});
const tiptap = await notes.create(server.orm.em.fork(), {
  organizationId: org, parent: { kind: 'assay', id: patch.id }, type: 'NOTE', format: 'TIPTAP',
  content: JSON.stringify({ type: 'doc', content: [{ type: 'paragraph', content: [{ type: 'text', text: 'Seal resistance above one gigaohm' }] }] }),
});
const task = await created(`/studies/${herg.id}/tasks`, { label: 'Order WAS antibodies' });
const link = await created(`/assays/${patch.id}/external-links`, { label: 'Recording protocol on the wiki', url: 'https://wiki.example.org/patch' });

type Hit = { type: string; id: string; code: string | null; title: string; snippet: string; projectId: string | null; studyId: string | null; assayId: string | null; score: number };
type Page = { content: Hit[]; totalElements: number; totalPages: number; number: number; size: number };

async function search(query: string, key = alice.key): Promise<Page> {
  const res = await server.get(`/api/v1/search?${query.includes('=') ? query : `q=${encodeURIComponent(query)}`}`, { key });
  if (res.status !== 200) throw new Error(`search ${query}: ${res.status} ${res.text}`);
  return res.body;
}
const ids = (page: Page) => page.content.map((h) => h.id);

t.test('a page of hits, best first, each with its kind, code, title, snippet, parents and score', async (t) => {
  const page = await search('hERG');
  t.same(Object.keys(page).sort(), ['content', 'empty', 'first', 'last', 'number', 'numberOfElements', 'pageable', 'size', 'sort', 'totalElements', 'totalPages']);
  t.same(Object.keys(page.content[0]), ['type', 'id', 'code', 'title', 'snippet', 'projectId', 'studyId', 'assayId', 'score']);
  t.same(new Set(ids(page)), new Set([project.id, herg.id, conclusion.id]));
  t.equal(page.totalElements, 3);
  const scores = page.content.map((h) => h.score);
  t.same(scores, [...scores].sort((a, b) => b - a), 'best first');
  t.equal(page.content[0].id, herg.id, 'the name counts most: the study named hERG first');
  t.match(page.content.find((h) => h.id === herg.id), { type: 'study', code: 'STUDY-0142', title: 'hERG potency', projectId: project.id, studyId: null, assayId: null });
  t.match(page.content.find((h) => h.id === project.id), { type: 'project', code: 'KIN-001', title: 'Kinase profiling', projectId: null });
  t.match(page.content.find((h) => h.id === conclusion.id), { type: 'note', code: null, title: 'Conclusion of STUDY-0142', projectId: project.id, studyId: herg.id, assayId: null });
  t.match(page.content.find((h) => h.id === herg.id)!.snippet, /<mark>hERG<\/mark> potency/);
  const onAssay = (await search('gigaohm')).content[0];
  t.match(onAssay, { type: 'note', id: tiptap.id, projectId: project.id, studyId: herg.id, assayId: patch.id }, 'a note of an assay names its project, study and assay');
  t.match((await search('wiki')).content, [{ type: 'external_link', id: link.id, title: 'Recording protocol on the wiki', assayId: patch.id }]);
  t.match((await search('antibodies')).content, [{ type: 'task', id: task.id, title: 'Order WAS antibodies', studyId: herg.id }]);
});

t.test('words: English stemming, names also as written, phrases, or, excluded words', async (t) => {
  t.same(ids(await search('kinases')), [project.id], '"kinases" finds "kinase"');
  t.same(ids(await search('conclude spring')), [conclusion.id], '"conclude" finds "concluded"; every word must match');
  t.same(new Set(ids(await search('recording'))), new Set([link.id, patch.id]), '"recording" and "recordings": a link by its label, an assay by its description');
  t.same(ids(await search('WAS')), [task.id], 'an English stop word still finds a name that is that word (the gene WAS)');
  t.same(ids(await search('was antibodies')), [task.id]);
  t.same(ids(await search('"dose response"')), [herg.id], 'a phrase');
  t.same(ids(await search('"response dose"')), [], 'a phrase in its order only');
  t.same(new Set(ids(await search('solubility or clearance'))), new Set([solubility.id, later.id]), 'or');
  const excluding = await search('hERG -potency');
  t.same(new Set(ids(excluding)), new Set([project.id, conclusion.id]), '-word excludes');
  t.ok(excluding.content.every((h) => h.score > 0 && h.snippet.includes('<mark>')), 'ranked and marked by the words it asks for');
  t.same(ids(await search('hERG -"compound AZD-1" -potency')), [project.id], '-"phrase" excludes');
  t.same(ids(await search('-hERG')), [], 'nothing but an exclusion finds nothing');
  t.same(ids(await search('paragraph')), [], 'a TIPTAP note is found by its text, not by its JSON');
  t.same(ids(await search('seal resistance')), [tiptap.id]);
  t.same((await search('!!!')).totalElements, 0, 'no word at all: no hits, no error');
});

t.test('codes: an exact code (any case) is the first hit; a prefix finds the codes that start with it', async (t) => {
  const exact = await search('study-0142');
  t.equal(exact.content[0].id, herg.id, 'before the note that names the code three times');
  t.ok(exact.content[0].score >= 2, 'an exact code scores 2 and more');
  t.same(new Set(ids(await search('STUDY-01'))), new Set([herg.id, solubility.id]), 'STUDY-01: STUDY-0142 and STUDY-0143, not STUDY-0200');
  t.same(ids(await search('Study-014')).slice(0, 2).sort(), [herg.id, solubility.id].sort());
  t.same(ids(await search('assay-0142')), [patch.id], 'an assay code prefix');
  t.same(ids(await search('kin-001')), [project.id], 'a project code');
  t.same(ids(await search('"KIN-001"')), [project.id], 'a quoted code');
  t.same(ids(await search('STUDY-09')), [], 'no code starts with it');
  const inside = await search('0142');
  t.same(new Set(ids(inside)), new Set([herg.id, patch.id]), 'a part of a code (3 characters or more) finds the codes containing it');
  t.ok(inside.content.every((h) => h.score >= 0.5 && h.score < 1), 'after exact codes and prefixes');
  t.same(ids(await search('01')), [], 'not with fewer than 3 characters');
  t.same(ids(await search('y_0')), [], 'a _ in the query is a character, not a wildcard');
});

t.test('a hit by its code alone shows the first 30 words of its text, nothing marked', async (t) => {
  const prefix = await search('STUDY-01');
  t.equal(prefix.content.find((h) => h.id === herg.id)?.snippet, 'hERG potency · Dose response of compounds in HEK cells');
  const words = Array.from({ length: 50 }, (_, i) => `w${i}`);
  const long = await created('/studies', { projectId: project.id, code: 'LONG-77', name: 'Wordy', description: `${words.slice(0, 10).join('\t ')}\n\n${words.slice(10).join('  ')}` });
  const [hit] = (await search('long-7')).content; // a prefix: no word of it matches
  t.equal(hit.id, long.id);
  t.equal(hit.snippet, ['Wordy', '·', ...words.slice(0, 28)].join(' '), 'white space of any kind is one space');
});

t.test('types narrows the kinds (repeatable or comma-separated); an unknown one is a 400 naming types', async (t) => {
  t.same(ids(await search('types=study&q=hERG')), [herg.id]);
  t.same(new Set(ids(await search('types=study,note&q=hERG'))), new Set([herg.id, conclusion.id]));
  t.same(new Set(ids(await search('types=study&types=project&q=hERG'))), new Set([herg.id, project.id]));
  const bad = await server.get('/api/v1/search?q=hERG&types=study,protocol', { key: alice.key });
  t.equal(bad.status, 400);
  t.match(bad.body, { errors: [{ field: 'types', message: /unknown type "protocol"; one of project, study, assay, .*note/ }] });
});

t.test('q: missing, blank or over 256 characters is a 400 naming q', async (t) => {
  for (const query of ['', '?q=', '?q=%20%20', `?q=${'x'.repeat(257)}`, '?types=study']) {
    const res = await server.get(`/api/v1/search${query}`, { key: alice.key });
    t.equal(res.status, 400, `GET /search${query.slice(0, 20)}`);
    t.match(res.body, { statusCode: 400, errors: [{ field: 'q' }] });
  }
  t.equal((await server.get(`/api/v1/search?q=${'x'.repeat(256)}`, { key: alice.key })).status, 200, '256 characters');
  const archived = await server.get('/api/v1/search?q=x&archived=maybe', { key: alice.key });
  t.match(archived, { status: 400, body: { errors: [{ field: 'archived' }] } });
});

t.test('archived records (and what sits in them) only with archived=true', async (t) => {
  const res = await server.post(`/api/v1/studies/${solubility.id}/archive?archived=true`, undefined, { key: alice.key });
  t.equal(res.status, 200, res.text);
  const note = await notes.create(server.orm.em.fork(), { organizationId: org, parent: { kind: 'study', id: solubility.id }, type: 'NOTE', format: 'TEXT', content: 'buffer pH' });
  t.same(ids(await search('solubility')), []);
  t.same(ids(await search('STUDY-0143')), [], 'not by its code either');
  t.same(ids(await search('buffer')), [], 'a note of an archived study is archived with it');
  t.same(new Set(ids(await search('archived=true&q=buffer'))), new Set([solubility.id, note.id]));
  await server.post(`/api/v1/studies/${solubility.id}/archive?archived=false`, undefined, { key: alice.key });
  t.same(new Set(ids(await search('buffer'))), new Set([solubility.id, note.id]), 'unarchived: back at once');
  // An archived note is never returned (spec, Notes), archived=true or not.
  await notes.edit({ actor: { keyId: alice.keyId, userId: alice.userId, organizationId: org, organizationUserId: alice.organizationUserId, roles: [], isAdmin: false }, em: server.orm.em.fork(), services: server.kernel.services, log: server.app.log }, note.id, { archived: true });
  t.same(ids(await search('archived=true&q=pH')), []);
});

t.test('pages: exact totals, every hit once, pages past the end empty', async (t) => {
  const batch = await make.project(alice, 'PUBLIC');
  for (let i = 1; i <= 23; i++) await created('/studies', { projectId: batch.id, name: `Batch ${i}`, description: i % 2 ? 'odd titration' : 'even titration' });
  const seen: string[] = [];
  for (let n = 0; n < 3; n++) {
    const page = await search(`q=titration&size=10&page=${n}`);
    t.match(page, { totalElements: 23, totalPages: 3, number: n, size: 10 });
    t.equal(page.content.length, n < 2 ? 10 : 3);
    seen.push(...ids(page));
  }
  t.equal(new Set(seen).size, 23, 'no hit twice across pages');
  t.match(await search('q=titration&size=10&page=7'), { totalElements: 23, content: [], empty: true });
  t.match(await search('q=odd%20titration&size=5'), { totalElements: 12 });
  const reversed = await search('q=titration&size=30&sort=score,asc');
  t.same(reversed.content.map((h) => h.score), reversed.content.map((h) => h.score).sort((a, b) => a - b), 'sort=score,asc turns it round');
  t.equal((await server.get('/api/v1/search?q=x&sort=title,asc', { key: alice.key })).status, 400, 'only score sorts');
});

t.test('a snippet marks the matched words; the record\'s own text is escaped, its tags left out', async (t) => {
  const s = await created('/studies', { projectId: project.id, name: 'Cardiotoxic <b>risk</b>', description: 'IC50 < 10 nM & "cardiotoxicity" <script>alert(1)</script>' });
  const [hit] = (await search('cardiotoxic')).content;
  t.equal(hit.id, s.id);
  t.equal(hit.title, 'Cardiotoxic <b>risk</b>', 'the title is the record\'s name as it is (JSON, not HTML)');
  t.equal(hit.snippet, '<mark>Cardiotoxic</mark> risk · IC50 &lt; 10 nM &amp; &quot;<mark>cardiotoxicity</mark>');
  const code = (await search('ASSAY-0142-A')).content[0];
  t.match(code.snippet, /^Patch clamp/, 'a hit by its code shows the beginning of its text');
});

t.test('the search tool: the same JSON as REST; query, types (list or string), archived, page, size', async (t) => {
  const client = await connectMcp(server.url, { key: bob.key, teardown: (fn) => t.teardown(fn) });
  const { tools } = await client.listTools();
  const tool = tools.find((x) => x.name === 'search')!;
  t.ok(tool, 'listed');
  t.match(tool.description, /instead of paging through list tools/, 'tells an agent to search before listing');
  t.match(client.getInstructions(), /call search first/, 'and so does initialize');
  t.same(Object.keys(tool.inputSchema.properties ?? {}).sort(), ['archived', 'page', 'query', 'size', 'types']);
  t.same(tool.inputSchema.required, ['query']);
  await expectToolMatchesRest(t, server, client, bob.key, 'search', { query: 'hERG' }, '/search?q=hERG');
  await expectToolMatchesRest(t, server, client, bob.key, 'search', { query: 'titration', page: 1, size: 4 }, '/search?q=titration&page=1&size=4');
  await expectToolMatchesRest(t, server, client, bob.key, 'search', { query: 'hERG', types: ['study', 'note'] }, '/search?q=hERG&types=study,note');
  await expectToolMatchesRest(t, server, client, bob.key, 'search', { query: 'hERG', types: 'project' }, '/search?q=hERG&types=project');
  await expectToolMatchesRest(t, server, client, bob.key, 'search', { query: 'solubility', archived: true }, '/search?q=solubility&archived=true');
  const blank = await callTool(client, 'search', { query: '  ' });
  t.equal(blank.isError, true);
  t.match(resultText(blank), /query: must not be blank/);
  t.equal((await callTool(client, 'search', { query: 'x', size: 101 })).isError, true, 'size at most 100');
  t.match(resultText(await callTool(client, 'search', { query: 'x', types: 'protocol' })), /types: unknown type "protocol"/);
});
