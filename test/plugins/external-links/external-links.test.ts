import t from 'tap';
import { randomUUID } from 'node:crypto';
import { startTestServer, testCast, type Member } from '../../support/server.ts';
import { callTool, connectMcp, expectToolMatchesRest, resultText } from '../../support/mcp.ts';
import { bases, records } from './records.ts';

const server = await startTestServer(t, { plugins: ['users', 'projects', 'studies', 'assay-types', 'assays', 'external-links'] });
const { org, admin, alice, bob, outsider } = await testCast(server);
const make = records(server);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const api = (path: string) => '/api/v1' + path;

// alice's PROTECTED tree (bob views, cannot contribute) and PRIVATE tree (bob cannot view).
const shared = await make.tree(alice, admin, 'PROTECTED');
const secret = await make.tree(alice, admin, 'PRIVATE');

async function link(who: Member, base: string, body: Record<string, unknown> = { label: 'Docs', url: 'https://example.org/docs' }) {
  const res = await server.post(api(`${base}/external-links`), body, { key: who.key });
  if (res.status !== 201) throw new Error(`link create failed: ${res.status} ${res.text}`);
  return res.body as Record<string, any> & { id: string; version: number };
}

async function activity(linkId: string) {
  return server.sql<{ event_type: string; category: string; data: Record<string, unknown>; project_id: string; study_id: string | null; assay_id: string | null; organization_user_id: string }>(
    `select event_type, category, data, project_id, study_id, assay_id, organization_user_id from activity
      where data->>'linkId' = ? order by date, event_type`,
    [linkId],
  );
}

t.test('create under a project, a study and an assay: 201 with the link, GET returns it, activity on the parent', async (t) => {
  for (const { kind, id, base } of bases(shared)) {
    const res = await server.post(api(`${base}/external-links`), { label: `ELN ${kind}`, url: 'https://eln.example.org/entry/1?x=y#z' }, { key: alice.key });
    t.equal(res.status, 201, kind);
    t.same(Object.keys(res.body).sort(), ['createdAt', 'createdById', 'id', 'label', 'organizationId', 'parentId', 'parentType', 'updatedAt', 'url', 'version']);
    t.match(res.body, {
      id: UUID,
      organizationId: org,
      parentType: kind.toUpperCase(),
      parentId: id,
      label: `ELN ${kind}`,
      url: 'https://eln.example.org/entry/1?x=y#z',
      createdById: alice.organizationUserId,
      version: 1,
    });
    t.equal(res.body.createdAt, res.body.updatedAt);
    const got = await server.get(api(`${base}/external-links/${res.body.id}`), { key: alice.key });
    t.equal(got.status, 200);
    t.same(got.body, res.body, `${kind}: GET returns what POST did`);
    t.same(await activity(res.body.id), [
      {
        event_type: 'external_link.created',
        category: 'RESEARCH',
        data: { linkId: res.body.id, label: `ELN ${kind}`, url: 'https://eln.example.org/entry/1?x=y#z' },
        project_id: shared.project.id,
        study_id: kind === 'project' ? null : shared.study.id,
        assay_id: kind === 'assay' ? shared.assay.id : null,
        organization_user_id: alice.organizationUserId,
      },
    ]);
  }
});

t.test('create: label must not be blank; url must be an absolute http(s) URL (400 naming the field)', async (t) => {
  const base = api(`/studies/${shared.study.id}/external-links`);
  const cases: [Record<string, unknown>, string, string | RegExp][] = [
    [{ url: 'https://example.org' }, 'label', 'is required'],
    [{ label: '', url: 'https://example.org' }, 'label', 'must not be blank'],
    [{ label: '   ', url: 'https://example.org' }, 'label', 'must not be blank'],
    [{ label: 'x'.repeat(256), url: 'https://example.org' }, 'label', /255/],
    [{ label: 5, url: 'https://example.org' }, 'label', /string/],
    [{ label: 'L' }, 'url', 'is required'],
    [{ label: 'L', url: 7 }, 'url', /string/],
    [{ label: 'L', url: 'https://example.org/' + 'a'.repeat(2048) }, 'url', /2048/],
  ];
  const badUrls = ['', 'ftp://x', 'example.com', 'www.example.com/page', '/relative/path', 'javascript:alert(1)', 'mailto:a@example.org',
    'file:///etc/passwd', 'data:text/html,hi', 'http://', 'https://', 'http:example.com', 'http:/example.com', 'https://exa mple.com',
    ' https://example.org', 'https://example.org ', '//example.org/x'];
  for (const url of badUrls) cases.push([{ label: 'L', url }, 'url', /^must be an absolute http or https URL/]);
  for (const [body, field, message] of cases) {
    const res = await server.post(base, body, { key: alice.key });
    t.equal(res.status, 400, JSON.stringify(body).slice(0, 80));
    t.match(res.body, { statusCode: 400, error: 'Bad Request', path: base });
    t.equal(res.body.errors.length, 1, JSON.stringify(res.body.errors));
    t.equal(res.body.errors[0].field, field);
    t.match(res.body.errors[0].message, message);
  }
  const count = await server.sql<{ n: string }>('select count(*) as n from external_link where parent_id = ? and label = ?', [shared.study.id, 'L']);
  t.equal(Number(count[0].n), 0, 'nothing was stored');
  for (const url of ['http://localhost:8080/a?b=c#d', 'HTTPS://Example.org/Path', 'https://user@example.org/x', 'http://10.0.0.1/', 'https://例え.jp/パス']) {
    const res = await server.post(base, { label: 'ok', url }, { key: alice.key });
    t.equal(res.status, 201, url);
    t.equal(res.body.url, url, 'stored as given');
  }
});

t.test('update merges: omitted fields keep their value; url follows the create rule; a stale version is a 409', async (t) => {
  const base = `/assays/${shared.assay.id}/external-links`;
  const l = await link(alice, `/assays/${shared.assay.id}`, { label: 'Old', url: 'http://old.example.org' });
  const path = api(`${base}/${l.id}`);
  const renamed = await server.put(path, { label: 'New' }, { key: alice.key });
  t.equal(renamed.status, 200);
  t.match(renamed.body, { id: l.id, label: 'New', url: 'http://old.example.org', version: 2, parentType: 'ASSAY', parentId: shared.assay.id });
  t.ok(renamed.body.updatedAt >= l.updatedAt);
  const moved = await server.put(path, { url: 'https://new.example.org/x', version: 2 }, { key: admin.key });
  t.equal(moved.status, 200, 'an admin may update');
  t.match(moved.body, { label: 'New', url: 'https://new.example.org/x', version: 3 });
  t.same((await server.get(path, { key: alice.key })).body, moved.body, 'GET returns the update');

  const stale = await server.put(path, { label: 'Stale', version: 1 }, { key: alice.key });
  t.equal(stale.status, 409);
  t.match(stale.body, { statusCode: 409, message: /version 3/ });
  for (const [body, field, message] of [
    [{ url: 'ftp://x' }, 'url', /absolute http or https URL/],
    [{ url: 'javascript:alert(1)' }, 'url', /absolute http or https URL/],
    [{ label: '' }, 'label', 'must not be blank'],
    [{ label: null }, 'label', /string/],
  ] as const) {
    const res = await server.put(path, body, { key: alice.key });
    t.equal(res.status, 400, JSON.stringify(body));
    t.match(res.body.errors, [{ field, message }]);
  }
  const same = await server.put(path, { label: 'New', url: 'https://new.example.org/x' }, { key: alice.key });
  t.equal(same.status, 200);
  t.equal(same.body.version, 3, 'an update that changes nothing keeps the version');
  t.same(
    (await activity(l.id)).map((a) => [a.event_type, a.data, a.assay_id, a.study_id, a.project_id]),
    [
      ['external_link.created', { linkId: l.id, label: 'Old', url: 'http://old.example.org' }, shared.assay.id, shared.study.id, shared.project.id],
      ['external_link.updated', { linkId: l.id, label: 'New', url: 'http://old.example.org', fields: ['label'] }, shared.assay.id, shared.study.id, shared.project.id],
      ['external_link.updated', { linkId: l.id, label: 'New', url: 'https://new.example.org/x', fields: ['url'] }, shared.assay.id, shared.study.id, shared.project.id],
    ],
    'one activity per change, none for the no-op update',
  );
});

t.test('delete: 204 without a body, then 404; activity external_link.deleted', async (t) => {
  const l = await link(alice, `/projects/${shared.project.id}`, { label: 'Gone', url: 'https://gone.example.org' });
  const path = api(`/projects/${shared.project.id}/external-links/${l.id}`);
  const res = await server.delete(path, { key: alice.key });
  t.equal(res.status, 204);
  t.equal(res.text, '');
  const after = await server.get(path, { key: alice.key });
  t.equal(after.status, 404);
  t.match(after.body, { statusCode: 404, message: `External link with id ${l.id} not found`, path });
  t.equal((await server.delete(path, { key: alice.key })).status, 404, 'a second delete is a 404');
  t.equal((await server.put(path, { label: 'x' }, { key: alice.key })).status, 404);
  t.match((await activity(l.id)).map((a) => [a.event_type, a.data, a.project_id]), [
    ['external_link.created', {}, shared.project.id],
    ['external_link.deleted', { linkId: l.id, label: 'Gone', url: 'https://gone.example.org' }, shared.project.id],
  ]);
});

t.test('a link resolves only under its own parent: another parent, of the same or another kind, is a 404', async (t) => {
  const l = await link(alice, `/studies/${shared.study.id}`);
  const sibling = await make.study(alice, shared.project.id);
  const wrong = [
    `/studies/${sibling.id}`,
    `/studies/${secret.study.id}`,
    `/projects/${shared.project.id}`,
    `/assays/${shared.assay.id}`,
  ];
  for (const base of wrong) {
    const path = api(`${base}/external-links/${l.id}`);
    const get = await server.get(path, { key: alice.key });
    t.equal(get.status, 404, `GET under ${base}`);
    t.match(get.body, { message: `External link with id ${l.id} not found` });
    t.equal((await server.put(path, { label: 'Hijack' }, { key: alice.key })).status, 404, `PUT under ${base}`);
    t.equal((await server.delete(path, { key: alice.key })).status, 404, `DELETE under ${base}`);
  }
  t.equal((await server.get(api(`/studies/${shared.study.id}/external-links/${l.id}`), { key: alice.key })).body.label, 'Docs', 'unchanged');
  const random = randomUUID();
  t.match((await server.get(api(`/studies/${shared.study.id}/external-links/${random}`), { key: alice.key })).body, {
    statusCode: 404,
    message: `External link with id ${random} not found`,
  });
  const list = await server.get(api(`/studies/${sibling.id}/external-links`), { key: alice.key });
  t.equal(list.body.totalElements, 0, 'the sibling lists none');
});

t.test('permissions: other organization and non-members of a PRIVATE parent get 404, viewers of a PROTECTED one 403 on writes', async (t) => {
  const viewable = await link(alice, `/studies/${shared.study.id}`, { label: 'Viewable', url: 'https://v.example.org' });
  const hidden = await link(alice, `/studies/${secret.study.id}`, { label: 'Hidden', url: 'https://h.example.org' });
  const body = { label: 'X', url: 'https://x.example.org' };
  const requests = (who: Member, base: string, id: string) => ({
    list: () => server.get(api(`${base}/external-links`), { key: who.key }),
    get: () => server.get(api(`${base}/external-links/${id}`), { key: who.key }),
    create: () => server.post(api(`${base}/external-links`), body, { key: who.key }),
    update: () => server.put(api(`${base}/external-links/${id}`), { label: 'Y' }, { key: who.key }),
    remove: () => server.delete(api(`${base}/external-links/${id}`), { key: who.key }),
  });

  // Another organization: every endpoint is a 404 naming the parent, even for its admin.
  for (const [base, id] of [[`/studies/${shared.study.id}`, viewable.id], [`/studies/${secret.study.id}`, hidden.id]]) {
    for (const [name, call] of Object.entries(requests(outsider, base, id))) {
      const res = await call();
      t.equal(res.status, 404, `outsider ${name} ${base}`);
      t.match(res.body, { message: /^Study with id .* not found$/ });
    }
  }
  // bob, not a member: PRIVATE is invisible (404 everywhere), PROTECTED is readable but not writable (403, empty).
  for (const [name, call] of Object.entries(requests(bob, `/studies/${secret.study.id}`, hidden.id))) {
    t.equal((await call()).status, 404, `bob ${name} on a PRIVATE study`);
  }
  const bobShared = requests(bob, `/studies/${shared.study.id}`, viewable.id);
  t.equal((await bobShared.list()).status, 200);
  t.equal((await bobShared.get()).status, 200);
  for (const call of [bobShared.create, bobShared.update, bobShared.remove]) {
    const res = await call();
    t.equal(res.status, 403, 'bob writes on a PROTECTED study');
    t.equal(res.text, '', '403 has an empty body');
  }
  // A member (alice) and an admin may do everything; on a PUBLIC project too, only members write.
  for (const who of [alice, admin]) {
    const own = await link(who, `/studies/${secret.study.id}`, body);
    const r = requests(who, `/studies/${secret.study.id}`, own.id);
    t.equal((await r.list()).status, 200);
    t.equal((await r.get()).status, 200);
    t.equal((await r.update()).status, 200);
    t.equal((await r.remove()).status, 204);
  }
  const publicTree = await make.tree(alice, admin, 'PUBLIC');
  const nonMember = await requests(bob, `/assays/${publicTree.assay.id}`, '').create();
  t.equal(nonMember.status, 403, 'a PUBLIC project is viewed by everyone, changed by its members only');
  await server.grant(publicTree.project.id, bob);
  const bobPublic = await link(bob, `/assays/${publicTree.assay.id}`, body);
  t.equal((await requests(bob, `/assays/${publicTree.assay.id}`, bobPublic.id).update()).status, 200, 'a member contributes to a PUBLIC project');
  const stored = await server.sql<{ label: string }>('select label from external_link where id in (?, ?)', [viewable.id, hidden.id]);
  t.same(stored.map((s) => s.label).sort(), ['Hidden', 'Viewable'], 'refused writes changed nothing');
});

t.test('list: page envelope, only this parent\'s links, sortable by label', async (t) => {
  const tree = await make.tree(alice, admin, 'PROTECTED');
  for (const label of ['b', 'c', 'a']) await link(alice, `/assays/${tree.assay.id}`, { label, url: `https://${label}.example.org` });
  await link(alice, `/studies/${tree.study.id}`, { label: 'study link', url: 'https://s.example.org' });
  const page = await server.get(api(`/assays/${tree.assay.id}/external-links?size=2`), { key: bob.key });
  t.equal(page.status, 200);
  t.match(page.body, { totalElements: 3, totalPages: 2, size: 2, number: 0, first: true, last: false, empty: false });
  t.same(page.body.content.map((l: { label: string }) => l.label), ['a', 'c'], 'newest first by default');
  const sorted = await server.get(api(`/assays/${tree.assay.id}/external-links?sort=label,asc`), { key: bob.key });
  t.same(sorted.body.content.map((l: { label: string }) => l.label), ['a', 'b', 'c']);
  const studyList = await server.get(api(`/studies/${tree.study.id}/external-links`), { key: bob.key });
  t.same(studyList.body.content.map((l: { label: string }) => l.label), ['study link'], 'a study lists its own links, not its assays\'');
  const bad = await server.get(api(`/assays/${tree.assay.id}/external-links?sort=url,asc`), { key: bob.key });
  t.equal(bad.status, 400);
  t.equal((await server.get(api(`/assays/${randomUUID()}/external-links`), { key: bob.key })).status, 404);
  t.equal((await server.get(api(`/assays/not-a-uuid/external-links`), { key: bob.key })).status, 400);
});

t.test('a moved study takes its links along: visibility follows the current project', async (t) => {
  const study = await make.study(alice, shared.project.id);
  const l = await link(alice, `/studies/${study.id}`);
  const path = api(`/studies/${study.id}/external-links/${l.id}`);
  t.equal((await server.get(path, { key: bob.key })).status, 200, 'visible in the PROTECTED project');
  const moved = await server.request('PATCH', api(`/studies/${study.id}/move`), { key: alice.key, body: { projectId: secret.project.id } });
  t.equal(moved.status, 200);
  t.equal((await server.get(path, { key: bob.key })).status, 404, 'hidden in the PRIVATE project');
  t.equal((await server.get(path, { key: alice.key })).status, 200, 'still the study\'s link');
});

t.test('deleting a project, study or assay deletes its links', async (t) => {
  const tree = await make.tree(alice, admin);
  const ids: string[] = [];
  for (const { base } of bases(tree)) ids.push((await link(alice, base)).id);
  const count = async () => Number((await server.sql<{ n: string }>('select count(*) as n from external_link where id in (?, ?, ?)', ids))[0].n);
  t.equal(await count(), 3);
  t.equal((await server.delete(api(`/assays/${tree.assay.id}`), { key: alice.key })).status, 204);
  t.equal(await count(), 2, 'the assay\'s link went with it');
  t.equal((await server.delete(api(`/projects/${tree.project.id}`), { key: alice.key })).status, 204);
  t.equal(await count(), 0, 'the project\'s and its study\'s links went with the project');
});

t.test('tools: each list tool equals its REST GET; there is no look-up tool; a parent not viewable is an error result', async (t) => {
  const tree = await make.tree(alice, admin, 'PROTECTED');
  for (const { base } of bases(tree)) for (const label of ['one', 'two', 'three']) await link(alice, base, { label, url: 'https://t.example.org' });
  const client = await connectMcp(server.url, { key: bob.key, teardown: (fn) => t.teardown(fn) });
  const names = (await client.listTools()).tools.map((tool) => tool.name).filter((name) => name.includes('external_link'));
  t.same(names.sort(), ['list_assay_external_links', 'list_project_external_links', 'list_study_external_links']);
  for (const { kind, id, base } of bases(tree)) {
    const tool = `list_${kind}_external_links`;
    const arg = { [`${kind}Id`]: id };
    await expectToolMatchesRest(t, server, client, bob.key, tool, arg, `${base}/external-links`);
    await expectToolMatchesRest(t, server, client, bob.key, tool, { ...arg, page: 1, size: 2 }, `${base}/external-links?page=1&size=2`);
  }
  for (const { kind, id } of [...bases(secret), { kind: 'study', id: randomUUID() }]) {
    const result = await callTool(client, `list_${kind}_external_links`, { [`${kind}Id`]: id });
    t.equal(result.isError, true, `${kind} not viewable`);
    t.match(resultText(result), /not found/i);
    t.match(resultText(result), id);
  }
  const outsiderClient = await connectMcp(server.url, { key: outsider.key, teardown: (fn) => t.teardown(fn) });
  const foreign = await callTool(outsiderClient, 'list_project_external_links', { projectId: tree.project.id });
  t.equal(foreign.isError, true, 'another organization\'s project');
});
