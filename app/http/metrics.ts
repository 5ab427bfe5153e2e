import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Pool } from 'pg';
import type { Orm } from '../../core/db/orm.ts';
import { query, sql } from '../../core/db/sql.ts';
import type { KernelServices } from '../../core/kernel/services.ts';
import { sendError } from './envelope.ts';
import type { ReadReplicas } from '../db/replicas.ts';

/** Route label of requests no route matched: one series, whatever the path (no unbounded labels). */
const UNMATCHED = 'unmatched';
/** Seconds; a read is a few milliseconds, a provisioning write can take seconds. */
const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

type Label = 'method' | 'route' | 'status';

interface Series {
  count: Counter.Internal;
  duration: Histogram.Internal<Label>;
}

/**
 * Request count and duration by route template, method and status. The labelled children are
 * cached in nested maps keyed by the (interned) route, method and status, so a request after
 * the first of its kind allocates nothing here: prom-client's own `labels()` hashes a string each
 * time.
 */
class RequestMetrics {
  readonly #count: Counter<Label>;
  readonly #duration: Histogram<Label>;
  readonly #series = new Map<string, Map<string, Map<number, Series>>>();

  constructor(registry: Registry) {
    const labelNames = ['method', 'route', 'status'] as const;
    this.#count = new Counter({ name: 'labdata_http_requests_total', help: 'HTTP requests answered, by route template, method and status', labelNames, registers: [registry] });
    this.#duration = new Histogram({
      name: 'labdata_http_request_duration_seconds',
      help: 'Time from receiving a request to sending its response, by route template, method and status',
      labelNames,
      buckets: BUCKETS,
      registers: [registry],
    });
  }

  observe(method: string, route: string, status: number, seconds: number) {
    let byMethod = this.#series.get(route);
    if (!byMethod) this.#series.set(route, (byMethod = new Map()));
    let byStatus = byMethod.get(method);
    if (!byStatus) byMethod.set(method, (byStatus = new Map()));
    let series = byStatus.get(status);
    if (!series) {
      const labels = { method, route, status: String(status) };
      byStatus.set(status, (series = { count: this.#count.labels(labels), duration: this.#duration.labels(labels) }));
    }
    series.count.inc();
    series.duration.observe(seconds);
  }
}

/** Pool and job-queue gauges: read at scrape time only, never on the request path. */
function registerScrapeGauges(registry: Registry, orm: Orm, services: KernelServices) {
  let pool: Pool | undefined;
  const nativePool = async () => (pool ??= (await orm.em.getConnection().getNativeClient()) as unknown as Pool);
  // Known before the first scrape: the gauges below read the pool synchronously, before this
  // scrape's own queries (the job-queue gauges) take a connection and count as a waiter.
  void nativePool().catch(() => {});
  new Gauge({
    name: 'labdata_db_pool_connections',
    help: 'Connections of the database pool, by state (in_use, idle)',
    labelNames: ['state'] as const,
    registers: [registry],
    async collect() {
      const p = pool ?? (await nativePool());
      this.set({ state: 'in_use' }, p.totalCount - p.idleCount);
      this.set({ state: 'idle' }, p.idleCount);
    },
  });
  new Gauge({
    name: 'labdata_db_pool_waiting',
    help: 'Requests waiting for a database connection',
    registers: [registry],
    async collect() {
      const p = pool ?? (await nativePool());
      // pg-pool queues every checkout for a tick, idle connections or not: only those no idle one serves wait.
      this.set(Math.max(0, p.waitingCount - p.idleCount));
    },
  });
  new Gauge({
    name: 'labdata_db_pool_max',
    help: 'Size limit of the database pool',
    registers: [registry],
    async collect() {
      this.set((await nativePool()).options.max ?? 10);
    },
  });

  const { jobs } = services;
  if (!jobs.defined) return;
  // Both gauges come from one query per scrape, made by whichever collects first.
  let pending: Promise<Map<string, { depth: number; age: number }>> | undefined;
  const queues = () =>
    (pending ??= (async () => {
      try {
        const names = jobs.names().flatMap((name) => [name, `${name}.failed`]);
        const rows = await query<{ name: string; depth: number; age: number }>(
          orm.em.fork(),
          sql`select name, count(*)::int as depth, coalesce(extract(epoch from now() - min(created_on)), 0)::float8 as age
                from pgboss.job where name in (${names}) and state in ('created', 'retry') group by name`,
        );
        const byName = new Map(names.map((name) => [name, { depth: 0, age: 0 }]));
        for (const row of rows) byName.set(row.name, { depth: Number(row.depth), age: Number(row.age) });
        return byName;
      } finally {
        setImmediate(() => (pending = undefined));
      }
    })());
  new Gauge({
    name: 'labdata_job_queue_depth',
    help: 'Jobs waiting to run (created or waiting for a retry), by queue',
    labelNames: ['queue'] as const,
    registers: [registry],
    async collect() {
      for (const [queue, { depth }] of await queues()) this.set({ queue }, depth);
    },
  });
  new Gauge({
    name: 'labdata_job_queue_oldest_age_seconds',
    help: 'Age of the oldest waiting job, by queue (0 when none waits)',
    labelNames: ['queue'] as const,
    registers: [registry],
    async collect() {
      for (const [queue, { age }] of await queues()) this.set({ queue }, age);
    },
  });
}

export interface MetricsOptions {
  orm: Orm;
  services: KernelServices;
  /** The API-key hook (401 without a valid key). */
  auth: (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;
  /** Reads on standbys (LABDATA_DATABASE_READ_URLS): counted by target, with their fallbacks. */
  replicas?: ReadReplicas;
}

/**
 * Prometheus metrics: every response is counted and timed by route template; GET /metrics
 * serves them (and the process's default metrics) to organization admins, or only to admins of
 * LABDATA_METRICS_ORGANIZATIONS when set (docs/operations.md).
 */
export function registerMetrics(app: FastifyInstance, opts: MetricsOptions) {
  // A registry per app: several apps in one process (tests) must not share or clash.
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const requests = new RequestMetrics(registry);
  registerScrapeGauges(registry, opts.orm, opts.services);
  const { config } = opts.services;
  if (opts.replicas) {
    const reads = new Counter({ name: 'labdata_db_reads_total', help: 'Read operations by the database that served them (primary, standby1, ...)', labelNames: ['target'] as const, registers: [registry] });
    const fallbacks = new Counter({ name: 'labdata_db_read_fallbacks_total', help: 'Reads a standby failed (unavailable, or a conflict with recovery) that the primary served', labelNames: ['reason'] as const, registers: [registry] });
    const replicas = opts.replicas;
    new Gauge({
      name: 'labdata_db_standby_lag_seconds',
      help: 'How old each standby\'s data is (-1: not answering)',
      labelNames: ['standby'] as const,
      registers: [registry],
      collect() {
        for (const s of replicas.status()) this.set({ standby: s.name }, s.lagMs === null ? -1 : s.lagMs / 1000);
      },
    });
    replicas.counters = { read: (target) => reads.inc({ target }), fallback: (reason) => fallbacks.inc({ reason }) };
  }

  // A callback hook, not an async one: no promise per request.
  app.addHook('onResponse', (request, reply, done) => {
    requests.observe(request.method, request.routeOptions.url ?? UNMATCHED, reply.statusCode, reply.elapsedTime / 1000);
    done();
  });

  app.get(
    '/metrics',
    {
      schema: { hide: true },
      onRequest: [
        opts.auth,
        async (request, reply) => {
          const actor = request.actor!;
          const allowed = config.metricsOrganizations;
          if (!actor.isAdmin || (allowed.length > 0 && !allowed.includes(actor.organizationId))) {
            return sendError(request, reply, 403, 'Metrics are for operators: an ORGANIZATION_ADMIN key (of LABDATA_METRICS_ORGANIZATIONS when set)');
          }
        },
      ],
    },
    async (_request, reply) => reply.type(registry.contentType).send(await registry.metrics()),
  );
}
