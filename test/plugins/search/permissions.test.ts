// Search sees what the lists see (issue 30, "No leaks", "Current"): hits, snippets and totals by
// visibility, membership (direct, team), role and organization; new text findable in the request
// that wrote it, old text not; moves, visibility changes and deletes at once, also under
// concurrent writes.
import t from 'tap';
import pino from 'pino';
import { startTestServer, testCast, type Member } from '../../support/server.ts';
import { records, type Parents } from '../external-links/records.ts';
import type { OperationContext } from '../../../core/public.ts';
import { NoteService } from '../../../plugins/notes/service.ts';

const server = await startTestServer(t);
const { org, admin, alice, bob, outsider } = await testCast(server);
const carol = await server.member(org);
const make = records(server);
const notes = new NoteService(server.kernel.services);
const log = pino({ level: 'silent' }) as unknown as OperationContext['log'];

function context(m: Member): OperationContext {
  const actor = { keyId: m.keyId, userId: m.userId, organizationId: m.organizationId, organizationUserId: m.organizationUserId, roles: ['ORGANIZATION_USER'], isAdmin: false };
  return { actor, em: server.orm.em.fork(), services: server.kernel.services, log };
}

async function ok(res: Promise<{ status: number; text: string; body: any }>, status = 200) {
  const r = await res;
  if (r.status !== status) throw new Error(`${r.status} ${r.text}`);
  return r.body;
}
const api = (path: string) => '/api/v1' + path;

/**
 * A project of `visibility` with a study and an assay, a note on each, a task and a link, every
 * one of them carrying `word` (8 records), and the project's code.
 */
async function tree(owner: Member, visibility: string, word: string, code: string, ownerAdmin = admin): Promise<Parents & { all: string[] }> {
  const p = await make.tree(owner, ownerAdmin, visibility);
  await ok(server.put(api(`/projects/${p.project.id}`), { code, name: `${word} embryos` }, { key: owner.key }));
  await ok(server.put(api(`/studies/${p.study.id}`), { name: `${word} toxicity` }, { key: owner.key }));
  await ok(server.put(api(`/assays/${p.assay.id}`), { name: `${word} heart rate` }, { key: owner.key }));
  const all = [p.project.id, p.study.id, p.assay.id];
  for (const [kind, id] of [['project', p.project.id], ['study', p.study.id], ['assay', p.assay.id]]) {
    all.push((await notes.create(server.orm.em.fork(), { organizationId: owner.organizationId, parent: { kind, id }, type: 'NOTE', format: 'TEXT', content: `Observed ${word} larvae` })).id);
  }
  all.push((await ok(server.post(api(`/studies/${p.study.id}/tasks`), { label: `Feed the ${word}` }, { key: owner.key }), 201)).id);
  all.push((await ok(server.post(api(`/assays/${p.assay.id}/external-links`), { label: `${word} atlas`, url: 'https://example.org' }, { key: owner.key }), 201)).id);
  return { ...p, all };
}

const privateTree = await tree(alice, 'PRIVATE', 'zebrafish', 'ZEB-1');
const protectedTree = await tree(alice, 'PROTECTED', 'axolotl', 'AXO-1');
const publicTree = await tree(alice, 'PUBLIC', 'medaka', 'MED-1');
const elsewhere = await tree(outsider, 'PUBLIC', 'zebrafish', 'ZEB-1', outsider);
const orgNote = await notes.create(server.orm.em.fork(), { organizationId: org, parent: { kind: 'organization', id: org }, type: 'NOTE', format: 'TEXT', content: 'Zebrafish facility newsletter' });
// carol reaches the PRIVATE project through a team.
const team = await server.team(org, [carol.organizationUserId]);
await server.sql('insert into project_member (id, organization_id, project_id, team_id) values (gen_random_uuid(), ?, ?, ?)', [org, privateTree.project.id, team]);

type Hit = { id: string; type: string; snippet: string; projectId: string | null; studyId: string | null };
async function search(who: Member, q: string, extra = ''): Promise<{ ids: string[]; total: number; hits: Hit[] }> {
  const body = await ok(server.get(api(`/search?q=${encodeURIComponent(q)}${extra.includes('size=') ? '' : '&size=100'}${extra}`), { key: who.key }));
  return { ids: body.content.map((h: Hit) => h.id), total: body.totalElements, hits: body.content };
}
const same = (t: { same: (...args: any[]) => unknown }, a: string[], b: string[], msg?: string) => t.same([...a].sort(), [...b].sort(), msg);

t.test('the permission matrix: PRIVATE, PROTECTED, PUBLIC × member, team member, non-member, admin, other organization', async (t) => {
  const cases: [string, Member, string[], string[], string[]][] = [
    // who, zebrafish (PRIVATE, + the organization note), axolotl (PROTECTED), medaka (PUBLIC)
    ['alice (member)', alice, [...privateTree.all, orgNote.id], protectedTree.all, publicTree.all],
    ['carol (member through a team)', carol, [...privateTree.all, orgNote.id], protectedTree.all, publicTree.all],
    ['bob (not a member)', bob, [orgNote.id], protectedTree.all, publicTree.all],
    ['admin', admin, [...privateTree.all, orgNote.id], protectedTree.all, publicTree.all],
    ['outsider (other organization)', outsider, elsewhere.all, [], []],
  ];
  for (const [who, m, zebrafish, axolotl, medaka] of cases) {
    for (const [word, expected] of [['zebrafish', zebrafish], ['axolotl', axolotl], ['medaka', medaka]] as const) {
      const found = await search(m, word);
      same(t, found.ids, expected, `${who}: ${word} hits`);
      t.equal(found.total, expected.length, `${who}: ${word} total`);
    }
  }
  // Records of all three kinds of project in one search: the total counts only the visible ones.
  const mixed = await search(bob, 'zebrafish or axolotl or medaka', '&size=5');
  t.equal(mixed.total, 1 + 8 + 8, 'bob: the PRIVATE tree counts nowhere in the total');
  t.equal((await search(alice, 'zebrafish or axolotl or medaka')).total, 25);
  t.same((await search(bob, 'ZEB-1')).ids, [], 'nor by its code');
  t.same((await search(bob, 'EB-1')).ids, [], 'nor by a part of it');
  // Codes check each PRIVATE match's grants (direct or through a team), words the caller's grants as a set.
  for (const [who, m] of [['alice', alice], ['carol', carol]] as const) {
    t.same((await search(m, 'ZEB-1')).ids, [privateTree.project.id], `${who} finds it by its code, only her organization's`);
    t.same((await search(m, 'EB-1')).ids, [privateTree.project.id], `${who} finds it by a part of its code`);
  }
  t.same((await search(admin, 'ZEB-1')).ids[0], privateTree.project.id, 'the admin finds it by its code; never the other organization\'s ZEB-1');
  t.notOk((await search(admin, 'ZEB-1')).ids.includes(elsewhere.project.id));
  // A word only the PRIVATE records have, beside one of a visible record: the snippet is the visible record's own text.
  const larvae = await search(bob, 'larvae');
  same(t, larvae.ids, [protectedTree.all[3], protectedTree.all[4], protectedTree.all[5], publicTree.all[3], publicTree.all[4], publicTree.all[5]], 'notes of visible records only');
  for (const hit of larvae.hits) t.notMatch(hit.snippet, /zebrafish/i, 'no snippet shows text bob may not read');
});

t.test('current: findable by new text in the request that wrote it, not by the old; deletes at once', async (t) => {
  const study = await ok(server.post(api('/studies'), { projectId: publicTree.project.id, name: 'Quokka survey' }, { key: alice.key }), 201);
  same(t, (await search(bob, 'quokka')).ids, [study.id], 'found right after the create');
  await ok(server.put(api(`/studies/${study.id}`), { name: 'Wombat survey', code: 'WOM-7' }, { key: alice.key }));
  same(t, (await search(bob, 'wombat')).ids, [study.id], 'by its new name');
  same(t, (await search(bob, 'quokka')).ids, [], 'no longer by its old one');
  same(t, (await search(bob, 'wom-7')).ids, [study.id], 'by its new code');
  const note = await notes.create(server.orm.em.fork(), { organizationId: org, parent: { kind: 'study', id: study.id }, type: 'NOTE', format: 'TEXT', content: 'first draft about capybaras' });
  await notes.edit(context(alice), note.id, { content: 'final text about tapirs' });
  same(t, (await search(bob, 'tapirs')).ids, [note.id], 'a note by its current content');
  same(t, (await search(bob, 'capybaras')).ids, [], 'not by an older version');
  await ok(server.delete(api(`/studies/${study.id}`), { key: alice.key }), 204);
  same(t, (await search(bob, 'wombat or tapirs')).ids, [], 'a deleted study and its note are gone');
});

t.test('moves and visibility changes apply at once, to the record and everything in it', async (t) => {
  const study = await ok(server.post(api('/studies'), { projectId: publicTree.project.id, name: 'Platypus study' }, { key: alice.key }), 201);
  const assay = await make.assay(alice, study.id, admin);
  await ok(server.put(api(`/assays/${assay.id}`), { name: 'Platypus venom' }, { key: alice.key }));
  const task = await ok(server.post(api(`/assays/${assay.id}/tasks`), { label: 'Platypus permits' }, { key: alice.key }), 201);
  const moved = [study.id, assay.id, task.id];
  same(t, (await search(bob, 'platypus')).ids, moved);

  await ok(server.request('PATCH', api(`/studies/${study.id}/move`), { key: alice.key, body: { projectId: privateTree.project.id } }));
  same(t, (await search(bob, 'platypus')).ids, [], 'moved into a PRIVATE project: gone for a non-member, children too');
  const seen = await search(alice, 'platypus');
  same(t, seen.ids, moved, 'still there for its member');
  t.ok(seen.hits.every((h) => h.projectId === privateTree.project.id), 'under its new project, children included');

  await ok(server.request('PATCH', api(`/assays/${assay.id}/move`), { key: alice.key, body: { studyId: protectedTree.study.id } }));
  const assayHits = (await search(bob, 'platypus')).hits;
  same(t, assayHits.map((h) => h.id), [assay.id, task.id], 'the assay moved to a PROTECTED study: visible again, with its task');
  t.ok(assayHits.every((h) => h.projectId === protectedTree.project.id), 'in its new project');
  t.equal(assayHits.find((h) => h.id === task.id)!.studyId, protectedTree.study.id, 'its task in its new study');

  await ok(server.put(api(`/projects/${privateTree.project.id}`), { visibility: 'PUBLIC' }, { key: alice.key }));
  t.equal((await search(bob, 'zebrafish')).total, 9, 'PRIVATE to PUBLIC: every record of the project, at once');
  same(t, (await search(bob, 'platypus')).ids, moved);
  await ok(server.put(api(`/projects/${privateTree.project.id}`), { visibility: 'PRIVATE' }, { key: alice.key }));
  t.equal((await search(bob, 'zebrafish')).total, 1, 'and back');

  await ok(server.post(api(`/projects/${protectedTree.project.id}/archive?archived=true`), undefined, { key: alice.key }));
  t.equal((await search(bob, 'axolotl')).total, 0, 'an archived project takes everything in it out of the default search');
  t.equal((await search(bob, 'axolotl', '&archived=true')).total, 8);
  await ok(server.post(api(`/projects/${protectedTree.project.id}/archive?archived=false`), undefined, { key: alice.key }));
  t.equal((await search(bob, 'axolotl')).total, 8);
});

t.test('concurrent moves, edits and visibility changes leave every document where its record is', async (t) => {
  const a = await make.project(alice, 'PUBLIC');
  const b = await make.project(alice, 'PRIVATE');
  const studies = await Promise.all([...Array(6)].map((_, i) => ok(server.post(api('/studies'), { projectId: a.id, name: `Numbat ${i}` }, { key: alice.key }), 201)));
  const writes = [
    ...studies.map((s, i) => server.request('PATCH', api(`/studies/${s.id}/move`), { key: alice.key, body: { projectId: i % 2 ? b.id : a.id } })),
    ...studies.map((s, i) => server.put(api(`/studies/${s.id}`), { description: `numbat burrow ${i}` }, { key: alice.key })),
    server.put(api(`/projects/${b.id}`), { visibility: 'PROTECTED' }, { key: alice.key }),
    server.put(api(`/projects/${a.id}`), { visibility: 'PRIVATE' }, { key: alice.key }),
    server.put(api(`/projects/${b.id}`), { visibility: 'PRIVATE' }, { key: alice.key }),
  ];
  for (const res of await Promise.all(writes)) t.equal(res.status, 200, res.text);
  // Whatever order they ran in, search agrees with the lists, for the owner and for bob.
  for (const who of [alice, bob]) {
    const listed = (await ok(server.get(api('/studies?size=200'), { key: who.key }))).content.filter((s: { name: string }) => s.name.startsWith('Numbat'));
    const found = await search(who, 'numbat', '&types=study');
    same(t, found.ids, listed.map((s: { id: string }) => s.id), `${who === alice ? 'alice' : 'bob'}: the same studies`);
    for (const hit of found.hits) t.equal(hit.projectId, listed.find((s: { id: string }) => s.id === hit.id).projectId);
  }
});
