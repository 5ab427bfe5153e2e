/**
 * `npm run bench webhooks` (`node bench/webhooks.ts`): what webhooks cost and how fast they go, on the real server
 * (`labdata serve`, every built-in plugin) and a receiver on loopback in this process.
 *
 * 1. Commit → delivery at 50 events/s: keyword creates sent every 20 ms for BENCH_LATENCY_SECONDS
 *    (20) to one subscription taking every event; the latency of each is its arrival at the
 *    receiver minus the record's `date` (set in the writing transaction, just before it commits).
 * 2. Drain: BENCH_BACKLOG (10,000) records committed at once (one INSERT … SELECT into activity,
 *    triggers on, as a burst of writes leaves them) for one subscription: deliveries per second
 *    from the commit to the last arrival.
 * 3. Writes with 0 and with 100 subscriptions on the organization, alternating rounds (A B A B)
 *    of BENCH_SECONDS with autocannon (BENCH_CONNECTIONS, 16) creating keywords. The 100
 *    take other event types: the cost of subscriptions to a write, which is the target
 *    (≤ 10 %): throughput, and CPU per write of the service and of the database's processes (the
 *    fan-out runs there), which a shared machine disturbs less than throughput. Then one round where the 100 take every event, the delivery work (100 deliveries
 *    per write, sent by the same server on the same cores) included: informational.
 *
 * Seeds a small tenant with bench/seed.ts; the database, the pinning (the service on one core,
 * PostgreSQL, the load generator and the receiver on the other) and the service's start are
 * bench/lib.ts's, as for `npm run bench`. Loopback only; every round is bounded in time. Needs the
 * machine to itself for figures to compare. Env: BENCH_DATABASE_URL / BENCH_POSTGRES=stock (see
 * bench/lib.ts), BENCH_SECONDS (5 per round), BENCH_ROUNDS (2), BENCH_LATENCY_SECONDS (20),
 * BENCH_BACKLOG (10000), BENCH_CONNECTIONS (16), BENCH_VERBOSE (the service's log on stderr),
 * BENCH_ONLY (`latency`, `drain` or `writes`: that part alone).
 */
import fs from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import os from 'node:os';
import autocannon from 'autocannon';
import { benchDatabase, cpuMs, describeServer, log, pinLoadAndDatabase, ROUNDS, SECONDS, startService, benchDir, migratedDeployment } from './lib.ts';
import { seed } from './seed.ts';

const env = process.env;
const LATENCY_SECONDS = Number(env.BENCH_LATENCY_SECONDS ?? 20);
const RATE = 50;
const BACKLOG = Number(env.BENCH_BACKLOG ?? 10_000);
const CONNECTIONS = Number(env.BENCH_CONNECTIONS ?? 16);
const SUBSCRIPTIONS = 100;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Arrivals at the receiver: per record id, the first arrival (ms), and how many requests in all. */
class Receiver {
  readonly arrivals = new Map<string, { at: number; date: string; type: string }>();
  requests = 0;
  url = '';
  readonly #server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = Date.now();
      this.requests++;
      const event = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      if (!this.arrivals.has(event.data.id)) this.arrivals.set(event.data.id, { at, date: event.data.date, type: event.type });
      res.writeHead(200).end();
    });
  });

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.#server.address() as { port: number }).port}/hook`;
  }

  close(): void {
    this.#server.closeAllConnections();
    this.#server.close();
  }
}

async function main() {
  const tmp = await benchDir('webhooks');
  const db = await benchDatabase(tmp);
  const receiver = new Receiver();
  let service: Awaited<ReturnType<typeof startService>>['child'] | undefined;
  try {
    const { kernel, orm } = await migratedDeployment(tmp, db.url);
    const s = await seed(orm.em.fork(), kernel.services.counters, { projects: 2_000, activity: 0, memberFactor: 1, log });
    const sql = async <T = Record<string, unknown>>(text: string, params: unknown[] = []) => (await orm.em.fork().execute(text, params)) as T[];
    const [{ ou }] = await sql<{ ou: string }>('select organization_user_id as ou from api_key where id = ?', [s.adminKey.slice(4, 24)]);

    const started = await startService(tmp, db.url, { LABDATA_RATE_LIMIT_PER_MINUTE: '0', LABDATA_WEBHOOK_ALLOW_PRIVATE: 'true' });
    service = started.child;
    const { tls, port } = started;
    const pinned = await pinLoadAndDatabase(db.url);
    const pid = service.pid!;
    const svc = `https://127.0.0.1:${port}`;
    const agent = new https.Agent({ keepAlive: true, maxSockets: 64, ca: tls.cert });
    const api = (method: string, p: string, body?: unknown) =>
      new Promise<{ status: number; body: any }>((resolve, reject) => {
        const req = https.request(svc + p, { method, agent, headers: { 'x-api-key': s.adminKey, 'content-type': 'application/json' } }, (res) => {
          let text = '';
          res.on('data', (c) => (text += c));
          res.on('end', () => resolve({ status: res.statusCode!, body: text ? JSON.parse(text) : undefined }));
        });
        req.on('error', reject);
        req.end(body === undefined ? undefined : JSON.stringify(body));
      });
    const subscribe = async (body: Record<string, unknown>) => {
      const res = await api('POST', '/api/v1/webhooks', { url: receiver.url, ...body });
      if (res.status !== 201) throw new Error(`subscribe: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body.id as string;
    };
    const unsubscribe = async (ids: string[]) => {
      for (const id of ids) await api('DELETE', `/api/v1/webhooks/${id}`);
    };
    /** Waits until nothing is left to sequence or to send. */
    const settled = async (ms = 120_000) => {
      const deadline = Date.now() + ms;
      for (;;) {
        const [{ n }] = await sql<{ n: number }>(`select (select count(*) from webhook_change_pending) + (select count(*) from webhook_delivery where status = 'PENDING') as n`);
        if (Number(n) === 0 || Date.now() > deadline) return Number(n);
        await sleep(200);
      }
    };
    await receiver.start();
    const results: string[] = [];

    const only = (part: string) => !env.BENCH_ONLY || part.includes(env.BENCH_ONLY);
    // 1. Commit → delivery latency at 50 events/s.
    if (only('latency')) {
      const hook = await subscribe({});
      await settled();
      const tag = `lat-${Date.now()}`;
      const total = RATE * LATENCY_SECONDS;
      const began = Date.now();
      const writes: Promise<unknown>[] = [];
      for (let i = 0; i < total; i++) {
        await sleep(Math.max(0, began + i * (1000 / RATE) - Date.now()));
        writes.push(api('POST', '/api/v1/keywords', { value: `${tag}-${i}` }));
      }
      const answers = await Promise.all(writes);
      const failed = answers.filter((a: any) => a.status !== 201).length;
      const ids = (await sql<{ id: string }>(`select id from activity where event_type = 'keyword.created' and data->>'value' like ?`, [`${tag}-%`])).map((r) => r.id);
      const deadline = Date.now() + 60_000;
      while (ids.some((id) => !receiver.arrivals.has(id)) && Date.now() < deadline) await sleep(50);
      const latencies = ids.filter((id) => receiver.arrivals.has(id)).map((id) => receiver.arrivals.get(id)!.at - Date.parse(receiver.arrivals.get(id)!.date)).sort((a, b) => a - b);
      const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.ceil((p / 100) * latencies.length) - 1)];
      results.push(`| commit → delivery at ${RATE} events/s (${LATENCY_SECONDS} s, ${latencies.length}/${ids.length} delivered${failed ? `, ${failed} writes failed` : ''}) | p50 ${pct(50)} ms, p99 ${pct(99)} ms, max ${latencies.at(-1)} ms | p99 ≤ 1,000 ms |`);
      log(results.at(-1)!);
      await unsubscribe([hook]);
      await settled();
    }

    // 2. A backlog of 10,000 records to one subscription.
    if (only('drain')) {
      const hook = await subscribe({ eventTypes: ['collaborator.updated'] });
      await settled();
      const before = await cpuMs(pid);
      const committed = Date.now();
      await sql(
        `insert into activity (id, organization_id, event_type, category, data, date, organization_user_id)
         select gen_random_uuid(), ?, 'collaborator.updated', 'ADMINISTRATIVE', jsonb_build_object('n', g), now(), ? from generate_series(1, ?) g`,
        [s.organizationId, ou, BACKLOG],
      );
      const inserted = Date.now() - committed;
      const ids = (await sql<{ id: string }>(`select id from activity where event_type = 'collaborator.updated' and organization_id = ?`, [s.organizationId])).map((r) => r.id);
      const deadline = Date.now() + 300_000;
      while (ids.some((id) => !receiver.arrivals.has(id)) && Date.now() < deadline) await sleep(100);
      const last = Math.max(...ids.map((id) => receiver.arrivals.get(id)?.at ?? Date.now()));
      const seconds = (last - committed) / 1000;
      const cpu = (await cpuMs(pid)) - before;
      const delivered = ids.filter((id) => receiver.arrivals.has(id)).length;
      results.push(`| drain of ${BACKLOG.toLocaleString('en-US')} records committed at once (insert ${inserted} ms) | ${Math.round(delivered / seconds)} deliveries/s (${delivered} in ${seconds.toFixed(1)} s; server CPU ${Math.round((cpu * 1000) / delivered)} µs/delivery) | ≥ 200/s |`);
      log(results.at(-1)!);
      await unsubscribe([hook]);
      await settled();
    }

    // 3. Writes with 0 and 100 subscriptions, alternating.
    if (only('writes')) {
      /** CPU of the database's processes (its backends, the service's pool among them), per pid: the fan-out runs there. */
      const dbCpu = async () => {
        const out = new Map<number, number>();
        for (const { pid: p } of await sql<{ pid: number }>('select pid from pg_stat_activity')) {
          const ms = await cpuMs(p).catch(() => undefined);
          if (ms !== undefined) out.set(p, ms);
        }
        return out;
      };
      const round = async (label: string) => {
        const dbBefore = await dbCpu();
        const before = await cpuMs(pid);
        const r = await autocannon({
          url: `${svc}/api/v1/keywords`,
          method: 'POST',
          headers: { 'x-api-key': s.adminKey, 'content-type': 'application/json' },
          body: JSON.stringify({ value: `w-${label}-[<id>]` }),
          idReplacement: true,
          connections: CONNECTIONS,
          duration: SECONDS,
        });
        const cpu = (await cpuMs(pid)) - before;
        let db = 0;
        for (const [p, ms] of await dbCpu()) db += ms - (dbBefore.get(p) ?? 0);
        const rate = r['2xx'] / r.duration;
        const perWrite = (ms: number) => Math.round((ms * 1000) / Math.max(1, r['2xx']));
        log(`writes, ${label}: ${Math.round(rate)} req/s (p99 ${r.latency.p99} ms, ${r.non2xx + r.errors} errors; CPU per write: server ${perWrite(cpu)} µs, database ${perWrite(db)} µs)`);
        return { rate, p99: r.latency.p99, cpu: perWrite(cpu + db) };
      };
      const make = async (body: Record<string, unknown>) => {
        const ids: string[] = [];
        for (let i = 0; i < SUBSCRIPTIONS; i++) ids.push(await subscribe(body));
        return ids;
      };
      await round('warm-up');
      await settled();
      const none: { rate: number; p99: number; cpu: number }[] = [];
      const hundred: { rate: number; p99: number; cpu: number }[] = [];
      for (let i = 0; i < ROUNDS; i++) {
        none.push(await round(`0 subscriptions, round ${i + 1}`));
        await settled();
        const ids = await make({ eventTypes: ['project.created'] });
        await settled();
        hundred.push(await round(`100 subscriptions (other event types), round ${i + 1}`));
        await settled();
        await unsubscribe(ids);
      }
      const mean = (xs: { rate: number }[]) => xs.reduce((a, x) => a + x.rate, 0) / xs.length;
      const meanCpu = (xs: { cpu: number }[]) => Math.round(xs.reduce((a, x) => a + x.cpu, 0) / xs.length);
      const pct = (a: number, b: number) => `${a / b - 1 >= 0 ? '+' : ''}${((a / b - 1) * 100).toFixed(1)} %`;
      results.push(`| writes (POST /keywords, ${CONNECTIONS} connections): 0 vs 100 subscriptions, A B × ${ROUNDS} | ${Math.round(mean(none))} vs ${Math.round(mean(hundred))} req/s (${pct(mean(hundred), mean(none))}; p99 ${median(none.map((x) => x.p99))} vs ${median(hundred.map((x) => x.p99))} ms); CPU per write, server + database: ${meanCpu(none)} vs ${meanCpu(hundred)} µs (${pct(meanCpu(hundred), meanCpu(none))}) | ≤ 10 % |`);
      log(results.at(-1)!);

      const ids = await make({});
      await settled();
      const sent = receiver.requests;
      const all = await round('100 subscriptions taking every event (delivery work included)');
      const made = await sql<{ n: string }>(`select count(*) as n from webhook_delivery where subscription_id in (${ids.map(() => '?').join(',')})`, ids);
      results.push(`| writes, 100 subscriptions taking every event (deliveries sent by the same server: informational) | ${Math.round(all.rate)} req/s (${(100 * all.rate / mean(none)).toFixed(0)} % of 0 subscriptions); ${receiver.requests - sent} deliveries sent during the round, ${made[0].n} queued | — |`);
      log(results.at(-1)!);
      await sql(`update webhook_subscription set active = false where id in (${ids.map(() => '?').join(',')})`, ids);
    }

    process.stdout.write(
      [
        `webhooks bench: ${os.cpus().length} cores (${pinned}), ${db.label}, ${await describeServer(db.url)}; every built-in plugin, receiver on loopback (http) in the load generator`,
        '',
        '| measure | result | target |',
        '|---|---|---|',
        ...results,
      ].join('\n') + '\n',
    );
    agent.destroy();
    await orm.close();
  } finally {
    receiver.close();
    service?.kill('SIGTERM');
    await sleep(1000);
    await db.stop();
    await fs.rm(tmp, { recursive: true, force: true });
  }
}

await main();
process.exit(0);
