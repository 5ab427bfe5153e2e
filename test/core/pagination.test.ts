import t from 'tap';
import { startTestServer, type Member } from '../support/server.ts';

const server = await startTestServer(t);
const org = await server.organization();
const owner = await server.member(org);
const k = { key: owner.key };

async function create(m: Member, code: string, name: string) {
  const res = await server.post('/api/v1/projects', { code, name, description: 'x', visibility: 'PUBLIC' }, { key: m.key });
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.text}`);
  return res.body as { id: string; name: string; code: string };
}

// Created out of name order, so order by name is not order by creation.
const names = ['Delta', 'Alpha', 'Echo', 'Charlie', 'Bravo'];
for (const [i, name] of names.entries()) await create(owner, `C-${i}`, name);
const sortedNames = [...names].sort();

// Another organization's projects must not show up in the totals.
const otherOrg = await server.organization();
const stranger = await server.member(otherOrg);
for (let i = 0; i < 3; i++) await create(stranger, `S-${i}`, `Stranger ${i}`);

t.test('the page envelope has every field the spec names', async (t) => {
  const res = await server.get('/api/v1/projects?sort=name,asc&size=2&page=1', k);
  t.equal(res.status, 200);
  t.match(res.body, {
    totalElements: 5,
    totalPages: 3,
    size: 2,
    number: 1,
    first: false,
    last: false,
    empty: false,
    pageable: { pageNumber: 1, pageSize: 2, offset: 2, paged: true, unpaged: false },
  });
  t.ok(Array.isArray(res.body.content));
  t.ok('sort' in res.body.pageable, 'pageable.sort');
  for (const key of ['content', 'totalElements', 'totalPages', 'size', 'number', 'first', 'last', 'empty', 'pageable']) {
    t.ok(key in res.body, key);
  }
});

t.test('defaults: page 0, size 20', async (t) => {
  const res = await server.get('/api/v1/projects', k);
  t.equal(res.status, 200);
  t.match(res.body, { number: 0, size: 20, totalElements: 5, totalPages: 1, first: true, last: true, empty: false });
  t.equal(res.body.content.length, 5);
  t.match(res.body.pageable, { pageNumber: 0, pageSize: 20, offset: 0 });
});

t.test('pages follow the requested order with exact totals', async (t) => {
  const seen: string[] = [];
  for (const page of [0, 1, 2]) {
    const res = await server.get(`/api/v1/projects?sort=name,asc&size=2&page=${page}`, k);
    t.equal(res.status, 200);
    t.equal(res.body.totalElements, 5);
    t.equal(res.body.totalPages, 3);
    t.equal(res.body.number, page);
    t.equal(res.body.first, page === 0);
    t.equal(res.body.last, page === 2);
    t.same(res.body.content.map((p: { name: string }) => p.name), sortedNames.slice(page * 2, page * 2 + 2), `page ${page}`);
    seen.push(...res.body.content.map((p: { name: string }) => p.name));
  }
  t.same(seen, sortedNames, 'every project once, in order');

  const desc = await server.get('/api/v1/projects?sort=name,desc&size=3', k);
  t.same(desc.body.content.map((p: { name: string }) => p.name), [...sortedNames].reverse().slice(0, 3));
});

t.test('a page past the end is empty but keeps the totals', async (t) => {
  const res = await server.get('/api/v1/projects?sort=name,asc&size=2&page=7', k);
  t.equal(res.status, 200);
  t.match(res.body, { content: [], totalElements: 5, totalPages: 3, number: 7, first: false, last: true, empty: true });
});

t.test('an empty result is one empty first and last page', async (t) => {
  const loner = await server.member(await server.organization());
  const res = await server.get('/api/v1/projects', { key: loner.key });
  t.match(res.body, { content: [], totalElements: 0, totalPages: 0, number: 0, first: true, last: true, empty: true });
});

t.test('sort is repeatable: later fields break ties', async (t) => {
  const o = await server.member(await server.organization());
  await create(o, 'B', 'Same');
  await create(o, 'C', 'Same');
  await create(o, 'A', 'Same');
  await create(o, 'Z', 'Other');
  const res = await server.get('/api/v1/projects?sort=name,desc&sort=code,asc', { key: o.key });
  t.equal(res.status, 200);
  t.same(res.body.content.map((p: { code: string }) => p.code), ['A', 'B', 'C', 'Z']);
  const reversed = await server.get('/api/v1/projects?sort=name,desc&sort=code,desc', { key: o.key });
  t.same(reversed.body.content.map((p: { code: string }) => p.code), ['C', 'B', 'A', 'Z']);
  const caseless = await server.get('/api/v1/projects?sort=code,DESC', { key: o.key });
  t.equal(caseless.status, 200, 'the direction is case-insensitive');
  t.same(caseless.body.content.map((p: { code: string }) => p.code), ['Z', 'C', 'B', 'A']);
  const noDirection = await server.get('/api/v1/projects?sort=code', { key: o.key });
  t.equal(noDirection.status, 200, 'the direction defaults to ascending');
  t.same(noDirection.body.content.map((p: { code: string }) => p.code), ['A', 'B', 'C', 'Z']);
});

t.test('pages are stable when the sort field ties', async (t) => {
  const o = await server.member(await server.organization());
  for (let i = 0; i < 7; i++) await create(o, 'SAME', 'Same');
  const ids: string[] = [];
  for (let page = 0; page < 4; page++) {
    const res = await server.get(`/api/v1/projects?sort=code,asc&size=2&page=${page}`, { key: o.key });
    ids.push(...res.body.content.map((p: { id: string }) => p.id));
  }
  t.equal(ids.length, 7);
  t.equal(new Set(ids).size, 7, 'no project appears twice or goes missing');
});

t.test('bad paging parameters are 400 with the envelope naming the parameter', async (t) => {
  const cases: [string, string][] = [
    ['page=-1', 'page'],
    ['page=abc', 'page'],
    ['page=1.5', 'page'],
    // JavaScript's Number() reads these; a page index is decimal digits only.
    ['page=0x10', 'page'],
    ['page=1.0', 'page'],
    ['page=%20', 'page'],
    ['size=1e2', 'size'],
    ['size=0b11', 'size'],
    ['size=%0A5', 'size'],
    ['size=0', 'size'],
    ['size=-1', 'size'],
    ['size=abc', 'size'],
    ['page=1234567890123456', 'page'],
    ['page=1&page=2', 'page'],
    ['size=5&size=6', 'size'],
    ['sort=nosuchfield,asc', 'sort'],
    ['sort=name,sideways', 'sort'],
    ['sort=name,asc,desc', 'sort'],
    ['sort=name,asc&sort=bogus,desc', 'sort'],
    ['sort=password,asc', 'sort'],
    ['sort=' + encodeURIComponent('name; drop table project'), 'sort'],
  ];
  const count = async () => (await server.sql<{ n: number }>('select count(*)::int as n from project'))[0].n;
  const before = await count();
  for (const [q, field] of cases) {
    const res = await server.get(`/api/v1/projects?${q}`, k);
    t.equal(res.status, 400, q);
    t.match(res.body, { statusCode: 400, error: 'Bad Request', path: '/api/v1/projects' }, q);
    t.type(res.body.timestamp, 'string');
    t.ok(res.body.errors?.some((e: { field: string }) => e.field === field), `${q}: errors name ${field}`);
    t.match(res.body.details, field, `${q}: details name ${field}`);
  }
  t.equal(await count(), before, 'no injected SQL ran');
});

t.test('size is capped at 200 (spec, "Limits": large pages may be capped at 200)', async (t) => {
  for (const size of ['200', '201', '5000', '99999999999999999999']) {
    const res = await server.get(`/api/v1/projects?size=${size}`, k);
    t.equal(res.status, 200, `size=${size}`);
    t.equal(res.body.size, 200, `size=${size}: the envelope says 200`);
    t.equal(res.body.pageable.pageSize, 200);
    t.ok(res.body.content.length <= 200);
  }
  const second = await server.get('/api/v1/projects?size=500&page=1', k);
  t.equal(second.body.pageable.offset, 200, 'page 1 of a capped size starts after the first 200');
});

t.test('every registered list follows the same paging rules', async (t) => {
  const lists = server.kernel.reads.filter((r) => r.paged && !r.path.includes(':'));
  t.ok(lists.length >= 3, 'projects, users and organization users at least');
  const admin = { key: (await server.admin(org)).key };
  for (const read of lists) {
    // A read that requires query parameters (search's `q`) gets a value for each.
    const path = `${read.path}?${((read.query as { required?: string[] } | undefined)?.required ?? []).map((name) => `${name}=project&`).join('')}`;
    // A list for organization admins only (webhook subscriptions) is a 403 to others: paged for an admin.
    const k = (await server.get(`/api/v1${path}size=1`, { key: owner.key })).status === 403 ? admin : { key: owner.key };
    const ok = await server.get(`/api/v1${path}size=1`, k);
    t.equal(ok.status, 200, read.path);
    t.equal(ok.body.size, 1, `${read.path}: size`);
    t.ok(ok.body.content.length <= 1);
    t.equal(ok.body.totalPages, ok.body.totalElements, `${read.path}: one per page`);
    t.equal((await server.get(`/api/v1${path}size=201`, k)).body.size, 200, `${read.path}: size capped at 200`);
    for (const q of ['page=-1', 'size=0', 'page=abc', 'sort=nosuchfield,asc']) {
      const bad = await server.get(`/api/v1${path}${q}`, k);
      t.equal(bad.status, 400, `${read.path}?${q}`);
      t.equal(bad.body.statusCode, 400);
    }
  }
});
