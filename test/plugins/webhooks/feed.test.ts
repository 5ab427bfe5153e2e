// The change feed GET /api/v1/activity/changes (plugins/webhooks): the activity the caller may
// see, oldest first in commit order, in pages joined by a cursor; no record skipped when two
// transactions commit in the other order than they started; `wait` holds an empty answer until
// something arrives (and ends when the server stops); history moved in by an import is there.
import t from 'tap';
import pg from 'pg';
import { createProject, startTestServer, testCast, type Member } from '../../support/server.ts';

const plugins = ['users', 'projects', 'activity', 'webhooks'];
const server = await startTestServer(t, { plugins, jobs: true });
const { org, admin, alice, outsider } = await testCast(server);

interface Changes {
  items: { id: string; eventType: string; projectId: string | null }[];
  nextCursor: string;
  hasMore: boolean;
}

async function changes(m: Member, query = ''): Promise<Changes> {
  const res = await server.get(`/api/v1/activity/changes${query}`, { key: m.key });
  if (res.status !== 200) throw new Error(`changes: ${res.status} ${res.text}`);
  return res.body;
}

/** Everything after `after` until `done` holds of what was read (changes are sequenced within moments of their commit). */
async function readUntil(m: Member, after: string | undefined, done: (ids: string[]) => boolean, size = 100) {
  const items: Changes['items'] = [];
  let cursor = after;
  for (let i = 0; i < 100 && !done(items.map((x) => x.id)); i++) {
    const page = await changes(m, `?size=${size}&wait=2${cursor === undefined ? '' : `&after=${cursor}`}`);
    items.push(...page.items);
    cursor = page.nextCursor;
  }
  return { items, cursor: cursor! };
}

/** The cursor at the end of what is sequenced now. */
async function end(m: Member): Promise<string> {
  let page = await changes(m, '?size=1000');
  while (page.hasMore || page.items.length) page = await changes(m, `?size=1000&after=${page.nextCursor}`);
  return page.nextCursor;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function eventOf(projectId: string) {
  const [row] = await server.sql<{ id: string }>(`select id from activity where project_id = ? and event_type = 'project.created'`, [projectId]);
  return row.id;
}

const open: string[] = [];
let hidden = '';

t.before(async () => {
  for (let i = 0; i < 5; i++) open.push(await eventOf((await createProject(server, admin, 'PUBLIC')).id));
  hidden = await eventOf((await createProject(server, admin, 'PRIVATE')).id);
});

t.test('from the oldest record, in commit order, each as GET /activity shows it; pages joined by nextCursor', async (t) => {
  const all = await readUntil(admin, undefined, (ids) => ids.includes(hidden));
  const ids = all.items.map((x) => x.id);
  t.same(ids.filter((id) => [...open, hidden].includes(id)), [...open, hidden], 'in the order they committed');
  t.equal(new Set(ids).size, ids.length, 'each once');
  const one = all.items.find((x) => x.id === open[0]);
  t.same(one, (await server.get(`/api/v1/activity/${open[0]}`, { key: admin.key })).body);

  // Two at a time: the same records, the same order.
  const paged: string[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await changes(admin, `?size=2${cursor ? `&after=${cursor}` : ''}`);
    t.ok(page.items.length <= 2);
    paged.push(...page.items.map((x) => x.id));
    cursor = page.nextCursor;
    if (!page.hasMore) break;
    t.equal(page.items.length, 2, 'a page short of size only at the end');
  }
  t.same(paged, ids);
  const end = await changes(admin, `?after=${cursor}`);
  t.same(end, { items: [], nextCursor: cursor, hasMore: false }, 'past the end: nothing, the same cursor');
});

t.test('the same visibility as the feeds: a member misses the PRIVATE project, another organization sees none of it', async (t) => {
  const seen = (await readUntil(alice, undefined, (ids) => ids.includes(open[4]))).items.map((x) => x.id);
  t.ok(open.every((id) => seen.includes(id)), 'the PUBLIC projects\' records');
  t.notOk(seen.includes(hidden), 'not the PRIVATE project\'s');
  t.same((await changes(alice, '?size=1000')).items.map((x) => x.id), seen, 'as a page');
  t.same((await changes(outsider, '?size=1000')).items.filter((x) => [...open, hidden].includes(x.id)), [], 'nothing of another organization');
});

t.test('no record skipped when two transactions commit in the other order than they started', async (t) => {
  const start = (await readUntil(admin, undefined, (ids) => ids.includes(hidden))).cursor;
  const first = new pg.Client({ connectionString: server.databaseUrl });
  const second = new pg.Client({ connectionString: server.databaseUrl });
  await Promise.all([first.connect(), second.connect()]);
  t.teardown(() => Promise.all([first.end(), second.end()]));
  const insert = (client: pg.Client, id: string) => client.query(
    `insert into activity (id, organization_id, event_type, category, data, date, organization_user_id) values ($1, $2, 'project.updated', 'RESEARCH', '{}', now(), $3)`,
    [id, org, admin.organizationUserId],
  );
  const early = crypto.randomUUID();
  const late = crypto.randomUUID();
  // `early` starts and writes first, `late` after it, and `late` commits first.
  await first.query('begin');
  await insert(first, early);
  await second.query('begin');
  await insert(second, late);
  await second.query('commit');

  const before = await readUntil(admin, start, (ids) => ids.includes(late));
  t.same(before.items.map((x) => x.id), [late], 'the committed one, alone');
  await first.query('commit');
  const after = await readUntil(admin, before.cursor, (ids) => ids.includes(early));
  t.same(after.items.map((x) => x.id), [early], 'then the one that committed later, past the cursor the reader holds');
});

t.test('wait: an empty answer waits until a record arrives; with nothing, it ends empty after wait seconds', async (t) => {
  const pending = changes(admin, `?after=${await end(admin)}&wait=20`);
  // The request has read (and found nothing) well before the record below exists.
  await sleep(300);
  const event = await eventOf((await createProject(server, admin, 'PUBLIC')).id);
  const got = await pending;
  t.same(got.items.map((x) => x.id), [event], 'the waiting request answers with what arrived');

  const cursor = await end(alice);
  const quiet = await changes(alice, `?after=${cursor}&wait=0.3`);
  t.same(quiet, { items: [], nextCursor: cursor, hasMore: false });
});

t.test('history moved in by an import is in the feed', async (t) => {
  const client = new pg.Client({ connectionString: server.databaseUrl });
  await client.connect();
  t.teardown(() => client.end());
  const id = crypto.randomUUID();
  await client.query('begin');
  await client.query(`set local labdata.history = 'on'`);
  await client.query(
    `insert into activity (id, organization_id, event_type, category, data, date, organization_user_id) values ($1, $2, 'project.created', 'RESEARCH', '{}', now() - interval '3 years', $3)`,
    [id, org, admin.organizationUserId],
  );
  await client.query('commit');
  const read = await readUntil(admin, undefined, (ids) => ids.includes(id));
  t.ok(read.items.some((x) => x.id === id), 'in commit order, with its own (old) date');
});

t.test('bad input is a 400 naming the parameter', async (t) => {
  for (const [query, field] of [['after=abc', 'after'], ['after=-1', 'after'], ['size=0', 'size'], ['size=1001', 'size'], ['wait=31', 'wait'], ['wait=-1', 'wait'], ['wait=x', 'wait']]) {
    const res = await server.get(`/api/v1/activity/changes?${query}`, { key: admin.key });
    t.equal(res.status, 400, query);
    t.equal(res.body.errors?.[0]?.field, field, query);
  }
  t.equal((await server.get('/api/v1/activity/changes')).status, 401);
});

t.test('a waiting request ends when its server stops', { timeout: 20_000 }, async (t) => {
  const second = await startTestServer(t, { plugins, databaseUrl: server.databaseUrl });
  const answer = fetch(`${second.url}/api/v1/activity/changes?after=${await end(admin)}&wait=30`, { headers: { 'x-api-key': admin.key } });
  await sleep(300);
  const closing = second.app.close();
  const res = await answer;
  t.equal(res.status, 200);
  t.same(((await res.json()) as { items: unknown[] }).items, [], 'answered at once with what there is');
  await closing;
});
