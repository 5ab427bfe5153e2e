import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import pino from 'pino';
import type { Config } from '../../core/config.ts';
import { loadConfig } from '../../app/config.ts';
import { createOrm, migrate, type Orm } from '../../core/db/orm.ts';
import type { Kernel } from '../../core/kernel/kernel.ts';
import { assembleDeployment } from '../../app/assemble.ts';
import { loadDeploymentPlugins as loadPlugins } from '../../app/plugins.ts';
import type { PluginDefinition } from '../../core/kernel/plugin.ts';
import { buildApp } from '../../app/http/app.ts';
import { JobRunner, type JobRunnerOptions } from '../../app/jobs/runner.ts';
import { BackgroundTasks } from '../../app/jobs/background.ts';
import type { KernelServices } from '../../core/kernel/services.ts';
import { addMembership, createOrganization, createTeam, createUser, issueKey, revokeKey, setRoles } from '../../app/cli/admin.ts';
import { createMigratedDatabase, type Teardown } from './db.ts';

export interface TestServerOptions {
  /** Plugin names/specifiers (default: every built-in), plus inline plugin definitions. */
  plugins?: string[];
  extraPlugins?: PluginDefinition[];
  /** Environment overrides, as LABDATA_* variables. */
  env?: Record<string, string>;
  /** An existing database (e.g. one the admin CLI provisioned) instead of a fresh one; the caller drops it. */
  databaseUrl?: string;
  /** A pino logger for the app (default: silent). */
  logger?: FastifyBaseLogger;
  /**
   * Run job workers (provisioning ...) and the plugins' background tasks in this server. Without
   * it jobs are queued but never run. Retries happen at once (no delay) either way.
   */
  jobs?: boolean;
  /** Seconds after which a run is presumed dead and rerun (restart tests); default 300. */
  jobExpireInSeconds?: number;
  /** Heartbeat of running jobs: a run whose process died is rerun once it is this stale (default 20, minimum 10). */
  jobHeartbeatSeconds?: number;
}

export interface Response<T = any> {
  status: number;
  headers: Headers;
  text: string;
  body: T;
}

export interface RequestOptions {
  key?: string;
  headers?: Record<string, string>;
  body?: unknown;
}

export interface Member {
  organizationId: string;
  userId: string;
  organizationUserId: string;
  keyId: string;
  key: string;
}

const silent = pino({ level: 'silent' }) as unknown as FastifyBaseLogger;

/**
 * A real HTTPS server (port 0) over its own database, with helpers to provision organizations,
 * users and keys through the same code the admin CLI uses.
 */
export class TestServer {
  readonly app: FastifyInstance;
  readonly orm: Orm;
  readonly kernel: Kernel;
  readonly url: string;
  readonly databaseUrl: string;

  readonly jobOptions: JobRunnerOptions<KernelServices> | undefined;
  /** The job engine (pg-boss) of this server: `jobs.abandon()` simulates a killed process. */
  readonly jobs: JobRunner<KernelServices>;

  constructor(app: FastifyInstance, orm: Orm, kernel: Kernel, url: string, databaseUrl: string, jobs: JobRunner<KernelServices>, jobOptions?: JobRunnerOptions<KernelServices>) {
    this.app = app;
    this.orm = orm;
    this.kernel = kernel;
    this.url = url;
    this.databaseUrl = databaseUrl;
    this.jobOptions = jobOptions;
    this.jobs = jobs;
  }

  /** Waits until no job is queued, waiting for a retry or running (fails after `timeoutMs`). */
  async drainJobs(timeoutMs = 30_000): Promise<void> {
    await this.waitFor(async () => (await this.jobs.pending()) === 0, timeoutMs, 'the job queue to drain');
  }

  /** Polls `predicate` until it holds (fails after `timeoutMs`, naming `what`). */
  async waitFor(predicate: () => Promise<boolean> | boolean, timeoutMs = 30_000, what = 'a condition'): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!(await predicate())) {
      if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Starts the job workers (again): e.g. after `jobs.abandon()` simulated a killed process. */
  async startJobs(): Promise<void> {
    if (!this.jobOptions) throw new Error('no plugin defines jobs');
    await this.jobs.start({ ...this.jobOptions, workers: true });
  }

  async request<T = any>(method: string, path: string, opts: RequestOptions = {}): Promise<Response<T>> {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.key) headers['x-api-key'] = opts.key;
    let body: string | undefined;
    if (opts.body !== undefined) {
      body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
      headers['content-type'] ??= 'application/json';
    }
    const res = await fetch(this.url + path, { method, headers, body });
    const text = await res.text();
    let parsed: unknown = undefined;
    if (text && (res.headers.get('content-type') ?? '').includes('json')) parsed = JSON.parse(text);
    return { status: res.status, headers: res.headers, text, body: parsed as T };
  }

  get = <T = any>(path: string, opts?: RequestOptions) => this.request<T>('GET', path, opts);
  post = <T = any>(path: string, body: unknown, opts?: RequestOptions) => this.request<T>('POST', path, { ...opts, body });
  put = <T = any>(path: string, body: unknown, opts?: RequestOptions) => this.request<T>('PUT', path, { ...opts, body });
  delete = <T = any>(path: string, opts?: RequestOptions) => this.request<T>('DELETE', path, opts);

  /** Runs SQL against the test database (for assertions on stored rows). */
  async sql<T = Record<string, unknown>>(text: string, params: unknown[] = []): Promise<T[]> {
    return (await this.orm.em.fork().execute(text, params)) as T[];
  }

  async organization(name = 'Org ' + Math.random().toString(36).slice(2, 8)): Promise<string> {
    const em = this.orm.em.fork();
    const org = createOrganization(em, name);
    await em.flush();
    return org.id;
  }

  /** A user in the organization with the given roles, and an API key for them. */
  async member(organizationId: string, opts: { roles?: string[]; status?: string; displayName?: string } = {}): Promise<Member> {
    const em = this.orm.em.fork();
    return em.transactional(async (tx) => {
      const tag = Math.random().toString(36).slice(2, 10);
      const user = await createUser(tx, `${tag}@example.test`, opts.displayName ?? `User ${tag}`);
      const ou = addMembership(tx, { organizationId, userId: user.id, roles: opts.roles ?? ['ORGANIZATION_USER'], status: opts.status ?? 'ACTIVE' });
      await tx.flush();
      const key = await issueKey(tx, { userId: user.id, organizationId, name: 'test', days: 30 }, true);
      return { organizationId, userId: user.id, organizationUserId: ou.id, keyId: key.id, key: key.key };
    });
  }

  async admin(organizationId: string): Promise<Member> {
    return this.member(organizationId, { roles: ['ORGANIZATION_ADMIN'] });
  }

  /** Another key for an existing member (e.g. one that is already expired). */
  async key(m: Member, opts: { expiresAt?: string; days?: number } = {}): Promise<{ id: string; key: string }> {
    const em = this.orm.em.fork();
    return em.transactional((tx) =>
      issueKey(tx, { userId: m.userId, organizationId: m.organizationId, name: 'extra', ...(opts.expiresAt === undefined ? { days: opts.days ?? 7 } : { expiresAt: opts.expiresAt }) }, true),
    );
  }

  async revoke(keyId: string) {
    return revokeKey(this.orm.em.fork(), keyId);
  }

  async setRoles(organizationUserId: string, roles: string[]) {
    return setRoles(this.orm.em.fork(), organizationUserId, roles);
  }

  /** Makes `member` a direct member of the project (what `POST /projects/{id}/access` grants; that plugin may not be loaded). */
  async grant(projectId: string, member: Member): Promise<void> {
    await this.sql(
      'insert into project_member (id, organization_id, project_id, organization_user_id) values (gen_random_uuid(), ?, ?, ?)',
      [member.organizationId, projectId, member.organizationUserId],
    );
  }

  async team(organizationId: string, memberIds: string[], name = 'Team'): Promise<string> {
    const em = this.orm.em.fork();
    const team = createTeam(em, { organizationId, name, memberIds });
    await em.flush();
    return team.id;
  }
}

/** The sealing key of test servers: the one run.ts gives every test process (and CLI run), so they agree. */
export const TEST_SECRET_KEY = process.env.LABDATA_SECRET_KEY ?? Buffer.alloc(32, 7).toString('base64');

export function testConfig(env: Record<string, string> = {}): Config {
  // Rate limiting is off unless a test is about it: suites send far more than a minute's quota per key.
  return loadConfig({ LABDATA_DATA_DIR: '/nonexistent-test-data-dir', LABDATA_SECRET_KEY: TEST_SECRET_KEY, LABDATA_RATE_LIMIT_PER_MINUTE: '0', ...env });
}

/** A clone of a database migrated once per run for this kernel's migrations (test/support/db.ts). */
function migratedFor(t: Teardown, kernel: Kernel): Promise<string> {
  const migrations = kernel.migrations.map((m) => m.name).join('\n');
  return createMigratedDatabase(t, migrations, async (url) => {
    const builder = await createOrm({ url, entities: kernel.entities, migrations: kernel.migrations });
    try {
      await migrate(builder);
    } finally {
      await builder.close(true);
    }
  });
}

/** A database already migrated for the deployment with these plugins; dropped in teardown. */
export async function migratedDatabase(t: Teardown, plugins: string[]): Promise<string> {
  return migratedFor(t, assembleDeployment(testConfig(), await loadPlugins(plugins), silent));
}

/** Starts a server for one test file; everything is closed and dropped in teardown. */
export async function startTestServer(t: Teardown, opts: TestServerOptions = {}): Promise<TestServer> {
  // One teardown, in order: stop serving, close the pool, then drop the database and data dir.
  const cleanups: (() => unknown)[] = [];
  t.teardown(async () => {
    for (const fn of cleanups.reverse()) await fn();
  });
  // A data dir of its own (the default storage drive lives there), unless the test names one.
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'labdata-test-'));
  cleanups.push(() => fs.rm(dataDir, { recursive: true, force: true }));
  const config = testConfig({ LABDATA_DATA_DIR: dataDir, ...opts.env });
  const plugins = await loadPlugins(opts.plugins ?? config.plugins);
  const kernel = assembleDeployment(config, [...plugins, ...(opts.extraPlugins ?? [])], silent);
  const databaseUrl = opts.databaseUrl ?? (await migratedFor({ teardown: (fn) => cleanups.push(fn) }, kernel));
  const orm = await createOrm({ url: databaseUrl, entities: kernel.entities, migrations: kernel.migrations });
  cleanups.push(() => orm.close(true));
  await migrate(orm);
  let jobOptions: JobRunnerOptions<KernelServices> | undefined;
  const jobs = new JobRunner(kernel.services.jobs);
  if (kernel.services.jobs.defined) {
    jobOptions = {
      url: databaseUrl,
      orm,
      services: kernel.services,
      log: opts.logger ?? silent,
      workers: opts.jobs ?? false,
      retryDelayScale: 0,
      pollingIntervalSeconds: 0.5,
      superviseIntervalSeconds: 1,
      expireInSeconds: opts.jobExpireInSeconds,
      heartbeatSeconds: opts.jobHeartbeatSeconds,
      concurrency: config.jobConcurrency,
    };
    await jobs.start(jobOptions);
    // Before the pool closes (cleanups run in reverse).
    cleanups.push(() => jobs.stop({ graceful: false }));
  }
  if (opts.jobs) {
    const background = new BackgroundTasks(kernel.services.jobs);
    background.start({ orm, services: kernel.services, log: opts.logger ?? silent });
    cleanups.push(() => background.stop());
  }
  const tls = await testTls();
  const app = await buildApp({ kernel, orm, tls, logger: opts.logger });
  cleanups.push(() => app.close());
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as { port: number };
  return new TestServer(app, orm, kernel, `https://localhost:${port}`, databaseUrl, jobs, jobOptions);
}

export async function testTls(): Promise<{ cert: string; key: string }> {
  const certFile = process.env.LABDATA_TEST_TLS_CERT;
  const keyFile = process.env.LABDATA_TEST_TLS_KEY;
  if (!certFile || !keyFile) throw new Error('LABDATA_TEST_TLS_CERT/KEY are not set: run tests through npm test');
  const [cert, key] = await Promise.all([fs.readFile(certFile, 'utf8'), fs.readFile(keyFile, 'utf8')]);
  return { cert, key };
}

/**
 * The usual cast of a plugin test, created in this order: two organizations, an admin and two
 * members of the first, and an outsider (the admin of the other).
 */
export async function testCast(server: TestServer, names: [string, string] | [] = []) {
  const org = await server.organization(names[0]);
  const other = await server.organization(names[1]);
  return { org, other, admin: await server.admin(org), alice: await server.member(org), bob: await server.member(org), outsider: await server.admin(other) };
}

/** A project made by `owner` through the API; anything but 201 throws, naming the answer. */
export async function createProject(server: TestServer, owner: Member, visibility = 'PRIVATE') {
  const res = await server.post('/api/v1/projects', { code: 'P', name: 'P', description: 'd', visibility }, { key: owner.key });
  if (res.status !== 201) throw new Error(`project create failed: ${res.status} ${res.text}`);
  return res.body as { id: string };
}

/** A study of `projectId` made by `owner` through the API; anything but 201 throws. */
export async function createStudy(server: TestServer, owner: Member, projectId: string) {
  const res = await server.post('/api/v1/studies', { projectId, name: 'Study' }, { key: owner.key });
  if (res.status !== 201) throw new Error(`study create failed: ${res.status} ${res.text}`);
  return res.body as { id: string; projectId: string };
}
