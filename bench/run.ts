/**
 * `npm run bench`: the service's project list (auth lookup + visibility-filtered page with exact
 * total) under concurrent load, next to a bare fastify + pg server running the same SQL, so the
 * kernel's overhead is visible. Loopback only, bounded request count. Prints one JSON report.
 *
 * Env: LABDATA_DATABASE_URL (else an embedded PostgreSQL in a temp dir), BENCH_PROJECTS (5000),
 * BENCH_REQUESTS (3000), BENCH_CONCURRENCY (16).
 */
import fs from 'node:fs/promises';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import Fastify from 'fastify';
import pg from 'pg';
import pino from 'pino';
import type { FastifyBaseLogger } from 'fastify';
import { loadConfig } from '../core/config.ts';
import { createOrm, migrate } from '../core/db/orm.ts';
import { startEmbeddedDatabase } from '../core/db/embedded.ts';
import { assembleKernel } from '../core/kernel/kernel.ts';
import { loadPlugins } from '../core/kernel/loader.ts';
import { buildApp } from '../core/http/app.ts';
import { generateSelfSignedCertificate } from '../core/http/tls.ts';
import { addMembership, createOrganization, createUser, issueKey } from '../core/cli/admin.ts';

const PROJECTS = Number(process.env.BENCH_PROJECTS ?? 5000);
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 3000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
const ACTIVITY = Number(process.env.BENCH_ACTIVITY ?? 1_000_000);

/** Median wall time of `n` sequential GETs (after one warm-up). */
async function timeGet(url: string, headers: Record<string, string>, ca: string, n = 5): Promise<number> {
  const agent = new https.Agent({ keepAlive: true, ca });
  const once = () =>
    new Promise<number>((resolve, reject) => {
      const started = performance.now();
      https.get(url, { agent, headers }, (res) => {
        res.resume();
        res.on('end', () => (res.statusCode === 200 ? resolve(performance.now() - started) : reject(new Error(`HTTP ${res.statusCode}`))));
      }).on('error', reject);
    });
  await once();
  const times: number[] = [];
  for (let i = 0; i < n; i++) times.push(await once());
  agent.destroy();
  return Number(times.sort((a, b) => a - b)[Math.floor(n / 2)].toFixed(1));
}

async function load(url: string, headers: Record<string, string>, ca: string) {
  const agent = new https.Agent({ keepAlive: true, maxSockets: CONCURRENCY, ca });
  const latencies: number[] = [];
  let next = 0;
  let errors = 0;
  const one = () =>
    new Promise<void>((resolve) => {
      const started = performance.now();
      https
        .get(url, { agent, headers }, (res) => {
          res.resume();
          res.on('end', () => {
            if (res.statusCode !== 200) errors++;
            latencies.push(performance.now() - started);
            resolve();
          });
        })
        .on('error', () => {
          errors++;
          resolve();
        });
    });
  const began = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next++ < REQUESTS) await one();
    }),
  );
  const seconds = (performance.now() - began) / 1000;
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const pct = (p: number) => Number(latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))].toFixed(2));
  return { requests: latencies.length, errors, perSecond: Math.round(latencies.length / seconds), p50ms: pct(50), p95ms: pct(95), p99ms: pct(99) };
}

async function main() {
  const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'labdata-bench-'));
  await fs.chmod(tmp, 0o711);
  const silent = pino({ level: 'silent' });
  const db = process.env.LABDATA_DATABASE_URL
    ? { url: process.env.LABDATA_DATABASE_URL, stop: async () => {} }
    : await startEmbeddedDatabase(tmp, () => {});
  try {
    const config = loadConfig({ LABDATA_DATA_DIR: tmp });
    const kernel = assembleKernel(config, await loadPlugins(undefined), silent as unknown as FastifyBaseLogger);
    const orm = await createOrm({ url: db.url, entities: kernel.entities, migrations: kernel.migrations });
    await migrate(orm);

    // Seed: one organization, a member who belongs to every tenth project, projects of all visibilities.
    const em = orm.em.fork();
    const { organizationId, key, organizationUserId } = await em.transactional(async (tx) => {
      const org = createOrganization(tx, 'Bench Lab');
      const user = await createUser(tx, `bench-${Date.now()}@bench.test`, 'Bench');
      const ou = addMembership(tx, { organizationId: org.id, userId: user.id, roles: ['ORGANIZATION_USER'], status: 'ACTIVE' });
      await tx.flush();
      const k = await issueKey(tx, { userId: user.id, organizationId: org.id, name: 'bench', days: 7 }, true);
      return { organizationId: org.id, key: k.key, organizationUserId: ou.id };
    });
    await em.execute(
      `insert into project (id, organization_id, code, name, description, visibility, status, archived, created_by_id)
       select gen_random_uuid(), ?, 'P-' || i, 'Project ' || i, 'Seeded', (array['PUBLIC','PROTECTED','PRIVATE'])[1 + i % 3], 'ACTIVE', false, ?
         from generate_series(1, ?) i`,
      [organizationId, organizationUserId, PROJECTS],
    );
    await em.execute(
      `insert into project_member (id, organization_id, project_id, organization_user_id)
       select gen_random_uuid(), ?, id, ? from project where organization_id = ? and code ~ '0$'`,
      [organizationId, organizationUserId, organizationId],
    );
    await em.execute('analyze');

    const tls = await generateSelfSignedCertificate();
    const app = await buildApp({ kernel, orm, tls });
    await app.listen({ host: '127.0.0.1', port: 0 });
    const servicePort = (app.server.address() as { port: number }).port;

    // The baseline: bare fastify + pg, same auth lookup and the same visibility-filtered page.
    const pool = new pg.Pool({ connectionString: db.url, max: 10 });
    const bare = Fastify({ https: tls });
    const keyId = key.slice(4, 24);
    bare.get('/projects', async () => {
      const auth = await pool.query(
        `select k.organization_user_id, ou.organization_id from api_key k join organization_user ou on ou.id = k.organization_user_id
          where k.id = $1 and k.revoked_at is null and k.expires_at > now() and ou.status = 'ACTIVE'`,
        [keyId],
      );
      const { organization_user_id: ouId, organization_id: orgId } = auth.rows[0];
      const page = await pool.query(
        `select p.*, count(*) over () as total from project p
          where p.organization_id = $1 and (p.visibility in ('PUBLIC','PROTECTED') or exists (
            select 1 from project_member pm where pm.project_id = p.id and (pm.organization_user_id = $2 or pm.team_id in (
              select tm.team_id from team_member tm join team t on t.id = tm.team_id and t.active where tm.organization_user_id = $2))))
          order by p.created_at desc, p.id limit 20 offset 0`,
        [orgId, ouId],
      );
      return { content: page.rows, totalElements: Number(page.rows[0]?.total ?? 0) };
    });
    await bare.listen({ host: '127.0.0.1', port: 0 });
    const barePort = (bare.server.address() as { port: number }).port;

    const headers = { 'x-api-key': key };
    await load(`https://127.0.0.1:${servicePort}/api/v1/projects`, headers, tls.cert); // warm-up
    const service = await load(`https://127.0.0.1:${servicePort}/api/v1/projects`, headers, tls.cert);
    const baseline = await load(`https://127.0.0.1:${barePort}/projects`, headers, tls.cert);
    const plan = await em.execute(
      `explain (analyze, costs off) select p.id from project p where p.organization_id = ? and (p.visibility in ('PUBLIC','PROTECTED')
         or exists (select 1 from project_member pm where pm.project_id = p.id and pm.organization_user_id = ?))
        order by p.created_at desc, p.id limit 20`,
      [organizationId, organizationUserId],
    );
    // The activity feed on a large table: ACTIVITY records spread over the projects, newest first.
    await em.execute(
      `insert into activity (id, organization_id, event_type, category, data, date, project_id, organization_user_id)
       select gen_random_uuid(), ?, 'project.updated', (array['RESEARCH','GOVERNANCE','ADMINISTRATIVE'])[1 + i % 3], '{}'::jsonb,
              now() - make_interval(secs => i), (select id from project where organization_id = ? offset (i % ?) limit 1), ?
         from generate_series(1, ?) i`,
      [organizationId, organizationId, Math.min(PROJECTS, 200), organizationUserId, ACTIVITY],
    );
    await em.execute('vacuum analyze activity');
    const feedUrl = `https://127.0.0.1:${servicePort}/api/v1/activity?size=20`;
    const feed = {
      records: ACTIVITY,
      firstPageMs: await timeGet(feedUrl, headers, tls.cert),
      researchOnlyMs: await timeGet(feedUrl + '&category=RESEARCH', headers, tls.cert),
      byProjectMs: await timeGet(`https://127.0.0.1:${servicePort}/api/v1/projects/${(await em.execute(`select id from project where organization_id = ? and visibility = 'PUBLIC' limit 1`, [organizationId]))[0].id}/activity?size=20`, headers, tls.cert),
    };
    const feedPlan = await em.execute(
      `explain (analyze, costs off) select count(*) from activity a
        where a.organization_id = ? and ((a.project_id is null and a.organization_user_id = ?)
          or exists (select 1 from project p where p.id = a.project_id and p.organization_id = ?
            and (p.visibility in ('PUBLIC','PROTECTED') or exists (select 1 from project_member pm where pm.project_id = p.id and pm.organization_user_id = ?))))
        `,
      [organizationId, organizationUserId, organizationId, organizationUserId],
    );
    console.log(
      JSON.stringify(
        {
          activityFeed: feed,
          activityFeedCountPlan: feedPlan.map((row) => Object.values(row)[0]),
          projects: PROJECTS,
          concurrency: CONCURRENCY,
          service,
          bareFastifyPg: baseline,
          overhead: Number((baseline.perSecond / Math.max(1, service.perSecond)).toFixed(2)),
          rssMiB: Math.round(process.memoryUsage().rss / 2 ** 20),
          listPlan: plan.map((row) => Object.values(row)[0]),
        },
        null,
        2,
      ),
    );
    await bare.close();
    await pool.end();
    await app.close();
    await orm.close();
  } finally {
    await db.stop();
    await fs.rm(tmp, { recursive: true, force: true });
  }
}

await main();
process.exit(0);
