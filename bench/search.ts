/**
 * `npm run bench search` (`node bench/search.ts`): search (plugins/search) at a real tenant's size, next to a bare
 * fastify + pg server running the plain full-text query on the same documents (bench/bare.ts).
 *
 * Seeds 100k projects and their members (bench/seed.ts), then 300k studies, 300k assays and 1M
 * notes (with their versions) in 4 organizations, with codes (P-n, STUDY-000001, ASSAY-000001) and
 * text drawn from a vocabulary with a Zipf-like frequency (a word of rank k about 1/k as often as
 * the first), loaded with triggers off and indexed by `labdata recount` (the search plugin's
 * repairs), as an operator's bulk load would be. Then, over HTTPS with autocannon, alternating
 * rounds of the service and the bare server:
 * - a one-word query and a code-prefix query, as a member (the permission path with the most
 *   work: PRIVATE grants) and as an admin, against the bare server's top 20 by ts_rank, its
 *   count(*) of the matches, and both (a list with a naive total, as bench/bare.ts's lists);
 * - writes (create a study, create a task) with the search plugin and without it (its triggers
 *   disabled, a server without the plugin), and one INSERT ... SELECT of 100k and 200k tasks
 *   with and without the search triggers (linear: twice the rows, twice the time).
 * It checks first that the service's totals equal a count(*) under the permission rules, and
 * writes EXPLAIN (ANALYZE, BUFFERS) of the service's statements (generic plans, as the service
 * runs them), with JIT as the server has it and with `jit = off`, to BENCH_PLANS (default
 * ./search-plans.txt).
 *
 * The servers on one core, PostgreSQL and the load generator on the other (bench/lib.ts).
 * Loopback only; needs the machine to itself for figures to compare.
 * Env: BENCH_DATABASE_URL (else BENCH_POSTGRES=stock for Debian's packaged PostgreSQL, else the
 * embedded one: bench/lib.ts), BENCH_PROJECTS
 * (100000), BENCH_STUDIES (300000), BENCH_ASSAYS (300000), BENCH_NOTES (1000000), BENCH_SECONDS
 * (5 per round), BENCH_ROUNDS (2), BENCH_CONNECTIONS (32), BENCH_WORD (kinase), BENCH_CODE
 * (STUDY-0142), BENCH_PLANS, BENCH_PARTS (reads,writes,bulk: which of the three to run).
 */
import type { ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import pino from 'pino';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { FastifyBaseLogger } from 'fastify';
import { numberedText, Sql, statementObserver } from '../core/db/sql.ts';
import { builtInPlugins } from '../config/plugins.ts';
import { generateSelfSignedCertificate } from '../app/tls.ts';
import { recount } from '../app/db/recount.ts';
import { parsePageRequest } from '../app/http/pages.ts';
import type { Kernel } from '../core/kernel/kernel.ts';
import { SearchService, searchSort } from '../plugins/search/service.ts';
import { searchSources } from '../plugins/search/extensions.ts';
import { seed, type Seeded } from './seed.ts';
import { benchDatabase, CONNECTIONS, describeServer, emptyMeasure as empty, freePort, load, log, peakRssMiB, perSecond, pinLoadAndDatabase, root, ROUNDS, SECONDS, startChild, type Measure, type Target, benchDir, migratedDeployment, startBare } from './lib.ts';

const env = process.env;
const PROJECTS = Number(env.BENCH_PROJECTS ?? 100_000);
const STUDIES = Number(env.BENCH_STUDIES ?? 300_000);
const ASSAYS = Number(env.BENCH_ASSAYS ?? 300_000);
const NOTES = Number(env.BENCH_NOTES ?? 1_000_000);
const WORD = env.BENCH_WORD ?? 'kinase';
const CODE = env.BENCH_CODE ?? 'STUDY-0142';
const PLANS = env.BENCH_PLANS ?? path.resolve('search-plans.txt');
const PARTS = new Set((env.BENCH_PARTS ?? 'reads,writes,bulk').split(','));
let monitor: pg.Pool | undefined;
const measure = (target: Target, pid: number, m: Measure) => load(monitor!, target, pid, m);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

// The vocabulary, most frequent first: English function words, then the words of lab records, then
// gene, compound and cell-line names. BENCH_WORD sits at rank 400 (about 1 % of the notes).
const COMMON = `the of and to in a is that for was with as on were by at from this be are an which it or we
  not has have been after than between using all these two also both more when into only other used
  our each no most can there may one high low three time first new however but well further within`.split(/\s+/);
const LAB = `cell cells assay assays protein expression binding inhibitor inhibitors compound compounds dose response
  concentration plate well wells sample samples control controls buffer incubation temperature replicate replicates
  measurement analysis result results conclusion method protocol reagent dilution titration viability apoptosis
  proliferation migration invasion signaling pathway receptor ligand agonist antagonist metabolism clearance plasma
  stability solubility permeability absorption distribution excretion toxicity screening potency selectivity target
  gene mutation sequencing library antibody staining microscopy imaging fluorescence luminescence absorbance
  chromatography spectrometry mass peak retention column gradient elution purity yield synthesis batch lot stock
  solution media serum culture passage confluence transfection knockdown knockout overexpression vector plasmid
  primer amplification quantification calibration standard curve fit slope intercept baseline noise signal ratio
  fold change significance variance deviation mean median outlier normalization background subtraction threshold
  gating population subset marker lineage differentiation stem progenitor tissue organoid spheroid biopsy tumor
  xenograft mouse rat dosing vehicle formulation oral intravenous exposure half-life bioavailability metabolite
  enzyme substrate turnover kinetics affinity occupancy docking structure crystal model simulation prediction
  lipophilicity polarity charge hydrogen bond scaffold series analog analogs hit lead candidate backup optimization
  liability risk safety panel off-target channel transporter efflux uptake hepatocyte microsome cytochrome
  induction inhibition reversible irreversible covalent allosteric orthosteric pocket domain mutant wild-type
  isoform splice variant transcript readout endpoint timepoint baseline washout recovery rescue phenotype genotype
  cohort donor patient clinical preclinical in-vitro in-vivo ex-vivo validation qualification acceptance criteria
  deviation investigation root cause corrective action report summary draft review approval sign-off archive
  freezer fridge incubator centrifuge pipette reader robot liquid handler scanner cytometer sequencer spectrometer
  microscope balance shaker sonicator vortex hood cabinet bench notebook template entry folder repository`.split(/\s+/);
const NAMES_PREFIX = ['CYP', 'ABC', 'SLC', 'KCN', 'HER', 'EGF', 'VEG', 'PDG', 'MAP', 'JAK', 'BRC', 'TP', 'IL', 'TNF', 'CD', 'HLA', 'AZD', 'GSK', 'PF', 'BMS'];

function vocabulary(): string[] {
  const words = [...new Set([...COMMON, ...LAB])].filter((w) => w !== WORD);
  for (let i = 0; words.length < 2000; i++) {
    const prefix = NAMES_PREFIX[i % NAMES_PREFIX.length];
    words.push(i % 3 === 0 ? `${prefix}-${1000 + i}` : `${prefix}${(i * 7) % 97}${'ABCDEFGH'[i % 8]}`);
  }
  words.splice(399, 0, WORD);
  return words;
}

/** Names (`n` words of the vocabulary) of the rows of `keys` (a query with a bigint column `key`), set-based. */
const names = (keys: string, n: number) => `select key, initcap(string_agg(w.w, ' ' order by k)) as name
  from (select key, k, 60 + abs(hashint8(key * 977 + k)) % 1900 as r from (${keys}) s, generate_series(1, ${n}) k) x
  join bench_word w on w.rank = x.r group by key`;
/** Texts (`n` phrases) of the rows of `keys`, set-based. */
const texts = (keys: string, n: number) => `select key, string_agg(p.t, ' ' order by k) as text
  from (select key, k, abs(hashint8(key * 131 + k)) % 5000 as i from (${keys}) s, generate_series(1, ${n}) k) x
  join bench_phrase p on p.i = x.i group by key`;

/**
 * Studies, assays and notes with realistic text, loaded with triggers off (counted and indexed by
 * the recount). Text is made of phrases of 8 words, each word drawn with a log-uniform rank
 * (P(rank k) ≈ 1/(k ln N)); a record takes a few phrases picked by a hash of its number.
 */
async function seedRecords(em: EntityManager, step: (label: string, run: () => Promise<unknown>) => Promise<void>) {
  const words = vocabulary();
  await em.transactional(async (tx) => {
    await tx.execute('set local session_replication_role = replica');
    await tx.execute(`set local work_mem = '256MB'`);
    // Joins of generated rows (estimated at 1,000 whatever their number) hash: a nested loop over
    // 300,000 of them each way would never end.
    await tx.execute('set local enable_nestloop = off');
    await tx.execute(`create temp table bench_word (rank int primary key, w text) on commit drop`);
    await tx.execute(`insert into bench_word select i, w from unnest(?::text[]) with ordinality as x(w, i)`, [`{${words.map((w) => `"${w}"`).join(',')}}`]);
    await tx.execute(`create temp table bench_phrase (i int primary key, t text) on commit drop`);
    await tx.execute(`insert into bench_phrase select g, string_agg(w.w, ' ' order by k)
        from (select g, k, greatest(1, floor(exp(random() * ln(${words.length})))::int) as r from generate_series(0, 4999) g, generate_series(1, 8) k) x
        join bench_word w on w.rank = x.r group by g`);
    await step('project names and descriptions', () => tx.execute(
      `update project p set name = n.name, description = t.text
         from (select id, 9000000 + row_number() over (order by id) as key from project) k
         join (${names('select 9000000 + generate_series(1, (select count(*) from project)) as key', 3)}) n on n.key = k.key
         join (${texts('select 9000000 + generate_series(1, (select count(*) from project)) as key', 2)}) t on t.key = k.key
        where p.id = k.id`));
    await step(`${STUDIES} studies`, () => tx.execute(
      `insert into study (id, organization_id, project_id, code, name, description, status, archived, created_by_id, created_at, updated_at)
       select gen_random_uuid(), p.organization_id, p.id, 'STUDY-' || lpad(g.key::text, 6, '0'), n.name, t.text,
              'ACTIVE', g.key % 50 = 0, p.created_by_id, now() - g.key * interval '1 second', now() - g.key * interval '1 second'
         from (select generate_series(1, ?::int)::bigint as key) g
         join (select id, organization_id, created_by_id, row_number() over (order by id) - 1 as n from project) p
           on p.n = abs(hashint8(g.key)) % (select count(*) from project)
         join (${names(`select generate_series(1, ${STUDIES})::bigint as key`, 3)}) n on n.key = g.key
         join (${texts(`select generate_series(1, ${STUDIES})::bigint as key`, 3)}) t on t.key = g.key`, [STUDIES]));
    await step('assay types', () => tx.execute(
      `insert into assay_type (id, organization_id, name, status, created_by_id)
       select gen_random_uuid(), o.id, 'Bench type', 'ACTIVE', (select ou.id from organization_user ou where ou.organization_id = o.id limit 1)
         from organization o where exists (select 1 from project p where p.organization_id = o.id)`));
    await step(`${ASSAYS} assays`, () => tx.execute(
      `insert into assay (id, organization_id, study_id, assay_type_id, code, name, description, status, created_by_id, created_at, updated_at)
       select gen_random_uuid(), s.organization_id, s.id, t.id, 'ASSAY-' || lpad(s.key::text, 6, '0'), n.name, x.text, 'ACTIVE',
              s.created_by_id, s.created_at, s.created_at
         from (select *, substr(code, 7)::bigint as key from study where code like 'STUDY-%') s
         join assay_type t on t.organization_id = s.organization_id
         join (${names(`select 7000000 + generate_series(1, ${ASSAYS})::bigint as key`, 3)}) n on n.key = 7000000 + s.key
         join (${texts(`select 7000000 + generate_series(1, ${ASSAYS})::bigint as key`, 2)}) x on x.key = 7000000 + s.key
        where s.key <= ?`, [ASSAYS]));
    await step(`${NOTES} notes and their versions`, async () => {
      await tx.execute(`create temp table bench_parent on commit drop as
        select row_number() over () - 1 as n, kind, id, organization_id from (
          select 'study' as kind, id, organization_id from study union all
          select 'assay', id, organization_id from assay union all
          select 'project', id, organization_id from project) x`);
      await tx.execute(`create temp table bench_note on commit drop as
        select gen_random_uuid() as id, g as key, p.organization_id, p.kind, p.id as parent_id
          from generate_series(1, ?::bigint) g join bench_parent p on p.n = abs(hashint8(g + 3)) % (select count(*) from bench_parent)`, [NOTES]);
      await tx.execute(`insert into note (id, organization_id, parent_kind, parent_id, type, format, created_at, updated_at, current_version)
        select id, organization_id, kind, parent_id, (array['NOTE','COMMENT','CONCLUSION'])[1 + key % 3], 'MARKDOWN',
               now() - key * interval '1 second', now() - key * interval '1 second', 1 from bench_note`);
      await tx.execute(`insert into note_version (note_id, version, organization_id, content, created_at)
        select n.id, 1, n.organization_id, t.text, now() - n.key * interval '1 second'
          from bench_note n join (${texts(`select 5000000 + generate_series(1, ${NOTES})::bigint as key`, 6)}) t on t.key = 5000000 + n.key`);
    });
  });
}

/** The member's and the admin's actors, as the service builds them from their keys. */
async function actorOf(em: EntityManager, key: string, isAdmin: boolean) {
  const [row] = await em.execute(`select k.id as "keyId", ou.user_id as "userId", ou.organization_id as "organizationId", ou.id as "organizationUserId", ou.roles
    from api_key k join organization_user ou on ou.id = k.organization_user_id where k.id = ?`, [key.slice(4, 24)]);
  return { ...row, isAdmin } as { keyId: string; userId: string; organizationId: string; organizationUserId: string; roles: string[]; isAdmin: boolean };
}

/** The statements the service runs for a search, captured as it builds them. */
async function statementsOf(kernel: Kernel, em: EntityManager, actor: Awaited<ReturnType<typeof actorOf>>, q: string): Promise<Sql[]> {
  const service = new SearchService(searchSources(kernel.services).all());
  const seen: Sql[] = [];
  statementObserver.observe = (s) => seen.push(s);
  try {
    await service.search({ actor, em, services: kernel.services, log: pino({ level: 'silent' }) as unknown as FastifyBaseLogger }, { q }, parsePageRequest({}, searchSort));
  } finally {
    statementObserver.observe = undefined;
  }
  return seen;
}

/** EXPLAIN (ANALYZE, BUFFERS) of a statement as the service plans it (a generic plan), JIT as the server has it and off. */
async function explain(url: string, statement: Sql, label: string): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('set plan_cache_mode = force_generic_plan');
    await client.query('set max_parallel_workers_per_gather = 0');
    await client.query(`prepare bench_statement as ${numberedText(statement.text)}`);
    const args = statement.params.map((v) => (v === null ? 'null' : client.escapeLiteral(typeof v === 'string' ? v : JSON.stringify(v)))).join(', ');
    const out: string[] = [];
    for (const jit of ['default', 'off']) {
      await client.query(`set jit = ${jit}`);
      await client.query(`explain analyze execute bench_statement(${args})`); // warm the caches first
      const { rows } = await client.query(`explain (analyze, buffers) execute bench_statement(${args})`);
      const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
      out.push(`== ${label}, jit = ${jit} ==\n${plan}\n`);
      log(`${label}, jit ${jit}: ${/Execution Time: ([\d.]+ ms)/.exec(plan)?.[1]}${/JIT:/.test(plan) ? ' (JIT compiled)' : ''}`);
    }
    return out.join('\n');
  } finally {
    await client.end();
  }
}

/** The search total equals a count(*) of the matching documents under the permission rules. */
async function checkTotals(em: EntityManager, svc: string, ca: string, s: Seeded) {
  const total = (q: string, key: string) =>
    new Promise<number>((resolve, reject) => {
      https.get(`${svc}/api/v1/search?q=${encodeURIComponent(q)}`, { headers: { 'x-api-key': key }, ca }, (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => (res.statusCode === 200 ? resolve(JSON.parse(text).totalElements) : reject(new Error(`search ${q}: ${res.statusCode} ${text}`))));
      }).on('error', reject);
    });
  const member = await actorOf(em, s.memberKey, false);
  const visible = (who: 'admin' | 'member') => who === 'admin' ? 'true'
    : `(p.visibility in ('PUBLIC', 'PROTECTED') or exists (select 1 from project_member pm where pm.project_id = p.id and pm.organization_user_id = '${member.organizationUserId}'))`;
  // The matching documents, their permissions decided as the lists decide them (a join to the project).
  const matches = `select d.id, d.project_id from search_document d where d.organization_id = '${s.organizationId}' and not d.archived
    and (d.tsv @@ websearch_to_tsquery('english', $1) or lower(d.code) like lower($1) || '%')`;
  for (const q of [WORD, CODE]) {
    for (const who of ['member', 'admin'] as const) {
      const [{ n }] = await em.execute(`select count(*)::int as n from (${matches.replaceAll('$1', '?')}) m left join project p on p.id = m.project_id where ${visible(who)}`, [q, q]);
      const got = await total(q, who === 'admin' ? s.adminKey : s.memberKey);
      if (got !== n) throw new Error(`search total for "${q}" (${who}) is ${got}, count(*) says ${n}`);
      log(`total ok: search "${q}" (${who}) = ${got}`);
    }
  }
}

/** Turns the search plugin's triggers on the record tables on or off (the "without search" rounds). */
async function searchTriggers(pool: pg.Pool, on: boolean) {
  const { rows } = await pool.query(`select tgrelid::regclass::text as t, tgname from pg_trigger where tgname like 'search\\_%' and tgrelid <> 'search_document'::regclass`);
  for (const r of rows) await pool.query(`alter table ${r.t} ${on ? 'enable' : 'disable'} trigger ${r.tgname}`);
}

async function main() {
  const tmp = await benchDir('search');
  const children: ChildProcess[] = [];
  const db = await benchDatabase(tmp);
  try {
    const { kernel, orm } = await migratedDeployment(tmp, db.url);
    monitor = new pg.Pool({ connectionString: db.url, max: 1 });
    const began = Date.now();
    const s = await seed(orm.em.fork(), kernel.services.counters, { projects: PROJECTS, activity: 0, memberFactor: 1, log });
    const step = async (label: string, run: () => Promise<unknown>) => {
      const t0 = Date.now();
      await run();
      log(`seed: ${label} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
    };
    await seedRecords(orm.em.fork(), step);
    await step('labdata recount (counters, and the search documents of the loaded rows)', () => recount(kernel.services.counters, orm.em.fork()));
    await step('vacuum analyze', () => orm.em.fork().execute('vacuum analyze'));
    const [{ docs }] = await orm.em.fork().execute('select count(*)::int as docs from search_document');
    log(`seeded in ${((Date.now() - began) / 1000).toFixed(0)} s: ${docs} search documents`);

    const tls = await generateSelfSignedCertificate();
    await fs.writeFile(path.join(tmp, 'cert.pem'), tls.cert);
    await fs.writeFile(path.join(tmp, 'key.pem'), tls.key, { mode: 0o600 });
    const secret = crypto.randomBytes(32).toString('base64');
    const serve = async (plugins?: string) => {
      const port = await freePort();
      const started = await startChild([path.join(root, 'bin/labdata.js'), 'serve'], {
        ...env,
        ...(plugins ? { LABDATA_PLUGINS: plugins } : {}),
        LABDATA_DATABASE_URL: db.url,
        LABDATA_PORT: String(port),
        LABDATA_DATA_DIR: tmp,
        LABDATA_TLS_CERT: path.join(tmp, 'cert.pem'),
        LABDATA_TLS_KEY: path.join(tmp, 'key.pem'),
        LABDATA_SECRET_KEY: secret,
        LABDATA_RATE_LIMIT_PER_MINUTE: env.LABDATA_RATE_LIMIT_PER_MINUTE ?? '1000000000',
      }, /listening on https:/);
      children.push(started.child);
      return { url: `https://127.0.0.1:${port}`, pid: started.child.pid! };
    };
    const service = await serve();
    const bare = await startBare(tmp, db.url, s);
    children.push(bare.child);
    const { base } = bare;
    const pinned = await pinLoadAndDatabase(db.url);
    const member = { 'x-api-key': s.memberKey };
    const admin = { 'x-api-key': s.adminKey };
    await checkTotals(orm.em.fork(), service.url, tls.cert, s);

    const lines: string[] = [];
    const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
    const row = (m: Measure) => `${fmt(perSecond(m))} | ${median(m.p50)} | ${median(m.p99)} | ${fmt((m.cpuMs * 1000) / Math.max(1, m.requests))}`;
    if (PARTS.has('reads')) {
      // The plans, as the service runs them.
      const plans: string[] = [];
      for (const [who, key, isAdmin] of [['member', s.memberKey, false], ['admin', s.adminKey, true]] as const) {
        const actor = await actorOf(orm.em.fork(), key, isAdmin);
        for (const q of [WORD, CODE]) {
          for (const statement of await statementsOf(kernel, orm.em.fork(), actor, q)) plans.push(await explain(db.url, statement, `search "${q}" (${who})`));
        }
      }
      const words = `from search_document d where d.tsv @@ websearch_to_tsquery('english', ?) and d.organization_id = ?`;
      for (const [label, text] of [
        ['bare top 20', `select d.kind, d.id, ts_rank(d.tsv, websearch_to_tsquery('english', ?)) as rank ${words} order by rank desc limit 20`],
        ['bare count(*)', `select count(*) ${words}`],
      ]) {
        const params = label === 'bare top 20' ? [WORD, WORD, s.organizationId] : [WORD, s.organizationId];
        plans.push(await explain(db.url, new Sql(text, params), `${label} "${WORD}"`));
      }
      await fs.writeFile(PLANS, plans.join('\n'));
      log(`plans written to ${PLANS}`);

      const q = (text: string) => encodeURIComponent(text);
      const mcp = (args: Record<string, unknown>) => JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'search', arguments: args } });
      const reads: { name: string; service: Target; bare: Record<string, Target> }[] = [
        {
          name: `search "${WORD}" (member)`,
          service: { url: `${service.url}/api/v1/search?q=${q(WORD)}`, headers: member },
          bare: { 'top 20': { url: `${base}/search?q=${q(WORD)}` }, 'count(*)': { url: `${base}/search/count?q=${q(WORD)}` }, 'top 20 + count(*)': { url: `${base}/search/page?q=${q(WORD)}` } },
        },
        { name: `search "${WORD}" (admin)`, service: { url: `${service.url}/api/v1/search?q=${q(WORD)}`, headers: admin }, bare: {} },
        {
          name: `search "${CODE}" (member)`,
          service: { url: `${service.url}/api/v1/search?q=${q(CODE)}`, headers: member },
          bare: { 'top 20': { url: `${base}/search?q=${q(CODE)}` }, 'count(*)': { url: `${base}/search/count?q=${q(CODE)}` }, 'code prefix': { url: `${base}/search/code?q=${q(CODE)}` } },
        },
        { name: `search "${CODE}" (admin)`, service: { url: `${service.url}/api/v1/search?q=${q(CODE)}`, headers: admin }, bare: {} },
        {
          name: `MCP search "${WORD}" (member)`,
          service: { url: `${service.url}/mcp`, method: 'POST', body: mcp({ query: WORD }), headers: { ...member, 'content-type': 'application/json', accept: 'application/json, text/event-stream' } },
          bare: {},
        },
      ];
      lines.push('| request | req/s | p50 ms | p99 ms | server CPU µs/req | ratio to the service |', '|---|---|---|---|---|---|');
      for (const r of reads) {
        const svc = empty();
        const bares = Object.fromEntries(Object.keys(r.bare).map((k) => [k, empty()]));
        await measure(r.service, service.pid, empty()); // warm-up, not counted
        for (let round = 0; round < ROUNDS; round++) {
          await measure(r.service, service.pid, svc);
          for (const [k, target] of Object.entries(r.bare)) await measure(target, bare.child.pid!, bares[k]);
        }
        const rows = [`| service: ${r.name}${svc.errors ? ` (${svc.errors} errors)` : ''} | ${row(svc)} | |`,
          ...Object.entries(bares).map(([k, m]) => `| bare: ${k}${m.errors ? ` (${m.errors} errors)` : ''} | ${row(m)} | ${(perSecond(svc) / perSecond(m)).toFixed(2)} |`)];
        lines.push(...rows);
        log(rows.join('\n'));
      }
    }

    if (PARTS.has('writes')) {
      // Writes with the search plugin and without it (its triggers off, a server without the plugin).
      const withoutSearch = await serve(Object.keys(builtInPlugins).filter((p) => p !== 'search').join(','));
      // Creates spread over the member's projects (as bench/run.ts does), with words to index.
      const post = (url: string, rotate: { path: string; body: string }[]): Target => ({ url, method: 'POST', headers: { ...member, 'content-type': 'application/json' }, rotate });
      const writes: { name: string; target: (url: string) => Target }[] = [
        { name: 'POST /studies', target: (url) => post(url, s.memberProjects.map((id, i) => ({ path: '/api/v1/studies', body: JSON.stringify({ projectId: id, name: `Kinase selectivity screen ${i}`, description: 'Dose response of kinase inhibitors in HEK cells, replicate plates' }) }))) },
        { name: 'POST /projects/{id}/tasks', target: (url) => post(url, s.memberProjects.map((id, i) => ({ path: `/api/v1/projects/${id}/tasks`, body: JSON.stringify({ label: `Order hERG assay plates ${i}` }) }))) },
      ];
      lines.push('', '| write (member key) | with search req/s | p50 ms | p99 ms | CPU µs/req | without search req/s | p50 ms | p99 ms | CPU µs/req | ratio |', '|---|---|---|---|---|---|---|---|---|---|');
      for (const w of writes) {
        const on = empty();
        const off = empty();
        await measure(w.target(service.url), service.pid, empty());
        for (let round = 0; round < ROUNDS; round++) {
          await searchTriggers(monitor, true);
          await measure(w.target(service.url), service.pid, on);
          await searchTriggers(monitor, false);
          await measure(w.target(withoutSearch.url), withoutSearch.pid, off);
        }
        await searchTriggers(monitor, true);
        lines.push(`| ${w.name}${on.errors + off.errors ? ` (${on.errors + off.errors} errors)` : ''} | ${row(on)} | ${row(off)} | ${(perSecond(on) / perSecond(off)).toFixed(2)} |`);
        log(lines.at(-1)!);
      }
    }

    if (PARTS.has('bulk')) {
      // One INSERT ... SELECT of many tasks: linear with the search triggers, and what they cost.
      lines.push('', '| INSERT ... SELECT of tasks | with search triggers | without | ratio |', '|---|---|---|---|');
      for (const n of [100_000, 200_000]) {
        const times: number[] = [];
        for (const on of [true, false]) {
          await searchTriggers(monitor, on);
          const t0 = Date.now();
          await monitor.query(`insert into task (id, organization_id, parent_kind, parent_id, label, status, created_by_id)
            select gen_random_uuid(), s.organization_id, 'study', s.id, 'Imported task ' || g || ' kinase panel', 'TODO', s.created_by_id
              from generate_series(1, $1::int) g join (select id, organization_id, created_by_id, row_number() over () as n from study limit 100000) s on s.n = 1 + g % 100000`, [n]);
          times.push(Date.now() - t0);
          await monitor.query(`delete from task where label like 'Imported task %'`);
        }
        await searchTriggers(monitor, true);
        lines.push(`| ${fmt(n)} rows | ${(times[0] / 1000).toFixed(1)} s | ${(times[1] / 1000).toFixed(1)} s | ${(times[0] / times[1]).toFixed(2)} |`);
        log(lines.at(-1)!);
      }
    }

    const header = `${PROJECTS.toLocaleString('en-US')} projects, ${STUDIES.toLocaleString('en-US')} studies, ${ASSAYS.toLocaleString('en-US')} assays, ` +
      `${NOTES.toLocaleString('en-US')} notes (${docs.toLocaleString('en-US')} search documents); ${db.label} (${await describeServer(db.url)}); ${pinned}; ` +
      `${CONNECTIONS} connections, ${ROUNDS} alternating rounds of ${SECONDS} s, ${os.cpus().length} cores; service peak RSS ${await peakRssMiB(service.pid)} MB`;
    process.stdout.write([header, '', ...lines].join('\n') + '\n');
    await orm.close();
    await monitor.end();
  } finally {
    for (const c of children) c.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));
    await db.stop();
    await fs.rm(tmp, { recursive: true, force: true });
  }
}

await main();
process.exit(0);
