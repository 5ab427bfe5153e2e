/**
 * The baseline of `npm run bench`: a bare fastify + pg server, no auth, no framework of ours —
 * one indexed query per record read; a list is its page plus a naive `count(*)` for the
 * organization, as a hand-written service would do it (or the page alone: `/activity-page`); a
 * create inserts the record and its activity row in one transaction. Started by bench/run.ts as
 * a child process (so its CPU and memory are measured alone); prints `listening <port>` when ready.
 *
 * Env: BENCH_DATABASE_URL, BENCH_TLS_CERT, BENCH_TLS_KEY (PEM files), BENCH_ORGANIZATION_ID,
 * BENCH_ACTOR_ID (the organization user creates are recorded for).
 */
import fs from 'node:fs';
import Fastify from 'fastify';
import pg from 'pg';

const pool = new pg.Pool({ connectionString: process.env.BENCH_DATABASE_URL, max: 10 });
const org = process.env.BENCH_ORGANIZATION_ID!;
const actor = process.env.BENCH_ACTOR_ID!;
const app = Fastify({
  https: { cert: fs.readFileSync(process.env.BENCH_TLS_CERT!), key: fs.readFileSync(process.env.BENCH_TLS_KEY!) },
});

app.get<{ Params: { id: string } }>('/projects/:id', async (request, reply) => {
  const { rows } = await pool.query('select * from project where id = $1', [request.params.id]);
  if (!rows[0]) return reply.code(404).send({ message: 'not found' });
  return rows[0];
});

async function page(select: string, count: string, params: unknown[]) {
  const [rows, total] = await Promise.all([pool.query(select, params), pool.query(count, params)]);
  return { content: rows.rows, totalElements: Number(total.rows[0].n) };
}

app.get('/projects', () =>
  page('select * from project where organization_id = $1 order by created_at desc, id limit 20',
    'select count(*) as n from project where organization_id = $1', [org]));

app.get('/activity', () =>
  page('select * from activity where organization_id = $1 order by date desc, id desc limit 20',
    'select count(*) as n from activity where organization_id = $1', [org]));

app.get<{ Params: { id: string } }>('/projects/:id/activity', (request) =>
  page('select * from activity where project_id = $1 order by date desc, id desc limit 20',
    'select count(*) as n from activity where project_id = $1', [request.params.id]));

app.get('/activity-page', async () => ({
  content: (await pool.query('select * from activity where organization_id = $1 order by date desc, id desc limit 20', [org])).rows,
}));

/** Inserts a record (its `insert`, returning the row) and its activity row in one transaction. */
async function create(insert: string, params: unknown[], eventType: string, scope: (row: any) => unknown[]) {
  const client = await pool.connect();
  try {
    await client.query('begin');
    const { rows } = await client.query(insert, params);
    await client.query(
      `insert into activity (id, organization_id, event_type, category, data, date, project_id, study_id, organization_user_id)
       values (gen_random_uuid(), $1, $2, 'RESEARCH', $3, now(), $4, $5, $6)`,
      [org, eventType, { name: rows[0].name ?? rows[0].label }, ...scope(rows[0]), actor]);
    await client.query('commit');
    return rows[0];
  } catch (err) {
    await client.query('rollback');
    throw err;
  } finally {
    client.release();
  }
}

app.post<{ Body: { projectId: string; name: string } }>('/studies', async (request, reply) => {
  const row = await create(
    `insert into study (id, organization_id, project_id, name, status, created_by_id) values (gen_random_uuid(), $1, $2, $3, 'ACTIVE', $4) returning *`,
    [org, request.body.projectId, request.body.name, actor], 'study.created', (s) => [s.project_id, s.id]);
  return reply.code(201).send(row);
});

app.post<{ Params: { id: string }; Body: { label: string } }>('/projects/:id/tasks', async (request, reply) => {
  const row = await create(
    `insert into task (id, organization_id, parent_kind, parent_id, label, status, created_by_id) values (gen_random_uuid(), $1, 'project', $2, $3, 'TODO', $4) returning *`,
    [org, request.params.id, request.body.label, actor], 'task.created', (x) => [x.parent_id, null]);
  return reply.code(201).send(row);
});

app.post<{ Params: { id: string }; Body: { label: string; url: string } }>('/projects/:id/external-links', async (request, reply) => {
  const row = await create(
    `insert into external_link (id, organization_id, parent_kind, parent_id, label, url, created_by_id) values (gen_random_uuid(), $1, 'project', $2, $3, $4, $5) returning *`,
    [org, request.params.id, request.body.label, request.body.url, actor], 'external_link.created', (x) => [x.parent_id, null]);
  return reply.code(201).send(row);
});

await app.listen({ host: '127.0.0.1', port: 0 });
process.stdout.write(`listening ${(app.server.address() as { port: number }).port}\n`);
const stop = async () => {
  await app.close();
  await pool.end();
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
