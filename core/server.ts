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
  const runtime = await openRuntime(config, log);
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
      // Stop accepting, let in-flight requests finish, then release the pool and the database.
      await app.close();
      await runtime.close();
    })());
  return { app, runtime, url, stop };
}

export async function serve(config: Config): Promise<void> {
  const server = await startServer(config);
  const shutdown = (signal: string) => {
    server.runtime.log.info({ signal }, 'shutting down');
    server.stop().then(
      () => process.exit(0),
      (err) => {
        server.runtime.log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGINT', () => shutdown('SIGINT'));
  process.once('SIGTERM', () => shutdown('SIGTERM'));
}
