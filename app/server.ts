import { X509Certificate, createPrivateKey } from 'node:crypto';
import fs from 'node:fs/promises';
import type https from 'node:https';
import tls from 'node:tls';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { Config } from '../core/config.ts';
import { openRuntime, createLogger, type Runtime } from './runtime.ts';
import { limitQueryTime } from './db/query-deadline.ts';
import { buildApp } from './http/app.ts';
import { ensureCertificate } from './tls.ts';
import { provisionDemo } from './cli/demo.ts';
import { trackConnections } from './connections.ts';
import { PluginLoadError } from '../core/kernel/loader.ts';
import { StartupError, ensureDataDir, firstLine, listenFailure } from './startup.ts';
import { takeEarlySignals } from './early-signals.ts';

/**
 * The PEM files named by LABDATA_TLS_CERT / LABDATA_TLS_KEY, checked to be a certificate and its
 * key, or the certificate generated into the data dir.
 */
async function tlsMaterial(config: Config) {
  if (config.tlsCertFile && config.tlsKeyFile) {
    const read = (file: string, setting: string) =>
      fs.readFile(file, 'utf8').catch((err: NodeJS.ErrnoException) => {
        throw new StartupError(`cannot read ${setting} file ${file} (${err.code ?? firstLine(err)}): check ${setting}`);
      });
    const [cert, key] = await Promise.all([read(config.tlsCertFile, 'LABDATA_TLS_CERT'), read(config.tlsKeyFile, 'LABDATA_TLS_KEY')]);
    try {
      tls.createSecureContext({ cert, key });
      // OpenSSL checks the pair only within one algorithm: an EC key beside an RSA certificate
      // loads, then every handshake fails.
      if (!new X509Certificate(cert).checkPrivateKey(createPrivateKey(key))) throw new Error('the private key does not belong to the certificate');
    } catch (err) {
      throw new StartupError(`LABDATA_TLS_CERT (${config.tlsCertFile}) and LABDATA_TLS_KEY (${config.tlsKeyFile}) are not a PEM certificate and its private key (${firstLine(err)}): check LABDATA_TLS_CERT and LABDATA_TLS_KEY`);
    }
    return { cert, key };
  }
  try {
    return await ensureCertificate(config.dataDir);
  } catch (err) {
    throw new StartupError(`cannot create the TLS certificate in ${config.dataDir} (${firstLine(err)}): set LABDATA_DATA_DIR to a writable directory, or LABDATA_TLS_CERT and LABDATA_TLS_KEY`);
  }
}

export interface RunningServer {
  app: FastifyInstance;
  runtime: Runtime;
  url: string;
  stop(): Promise<void>;
}

/** `npm start`: database, migrations, HTTPS; prints `listening on https://HOST:PORT` when ready. */
export async function startServer(config: Config): Promise<RunningServer> {
  const log = createLogger(config, { buffered: true });
  // What an operator can get wrong is checked before the database starts: each fails in one line.
  const needsDataDir = !config.databaseUrl || !config.tlsCertFile || !config.secretKey;
  if (needsDataDir) await ensureDataDir(config.dataDir);
  const tlsFiles = await tlsMaterial(config);
  const runtime = await openRuntime(config, log, { jobs: 'workers' });
  // Migrations are in: from here on a database that stops answering makes 503s, not requests
  // that hang (test servers, which seed large data through this pool, set it where they test it).
  await limitQueryTime(runtime.orm);
  let app: FastifyInstance;
  try {
    app = await buildApp({ kernel: runtime.kernel, orm: runtime.orm, tls: tlsFiles, logger: log as unknown as FastifyBaseLogger });
    const connections = trackConnections(app.server as unknown as https.Server, config.trustProxy);
    // Fastify calls this right before server.close(): pre-connected sockets go too (see connections.ts).
    const closeIdle = app.server.closeIdleConnections.bind(app.server);
    app.server.closeIdleConnections = () => {
      closeIdle();
      connections.closeIdle();
    };
    try {
      // Fastify cannot tell that the server its factory made speaks TLS: say https in the start line.
      await app.listen({ host: config.host, port: config.port, listenTextResolver: (address) => `Server listening at ${address.replace(/^http:/, 'https:')}` });
    } catch (err) {
      // Closed before the database goes: its listener (auth cache) then ends quietly.
      await app.close().catch(() => {});
      throw listenFailure(err, config.host, config.port);
    }
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
  // The start-up lines are out before the ready line (the log is buffered: app/runtime.ts);
  // a stderr that takes nothing (a closed pipe) delays the ready line by a second at most.
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, 1_000);
    log.flush(() => (clearTimeout(timer), resolve()));
  });
  process.stdout.write(`listening on ${url}\n`);
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      // Stop accepting, let in-flight requests finish (handlers too, whose client may have gone),
      // then stop the job workers (runtime.close does it first), release the pool and the database.
      await app.close();
      await app.handlersSettled();
      await runtime.close();
      log.flush();
    })());
  return { app, runtime, url, stop };
}

/** How long in-flight requests get to finish after SIGINT/SIGTERM before the process gives up. */
const SHUTDOWN_GRACE_MS = 30_000;
/** How long a stop requested during start-up waits for start-up to finish before giving up. */
const STARTUP_STOP_WAIT_MS = 10_000;
/**
 * A signal repeated within this window is the same stop request delivered twice: Ctrl-C under
 * `npm start` reaches the server from the terminal and again from npm, which forwards it.
 */
const REPEAT_WINDOW_MS = 1_000;

export async function serve(config: Config): Promise<void> {
  // Listening from the start: a stop requested while starting is honoured once started (the
  // default action would kill the process half-way, with an exit code that says "crashed").
  let requested: NodeJS.Signals | undefined;
  let requestedAt = 0;
  let startupGivesUp: NodeJS.Timeout | undefined;
  let shutdown = (signal: NodeJS.Signals) => {
    if (!requested) {
      requested = signal;
      requestedAt = Date.now();
      // A start-up that cannot finish (a database that stopped answering mid-migration) must not
      // hold a stop request for ever: migrations run in one transaction, so leaving is safe.
      startupGivesUp = setTimeout(() => {
        process.stderr.write(`labdata: ${signal} while starting, and start-up did not finish within ${STARTUP_STOP_WAIT_MS / 1000} s: exiting\n`);
        process.exit(1);
      }, STARTUP_STOP_WAIT_MS).unref();
    } else if (Date.now() - requestedAt >= REPEAT_WINDOW_MS) {
      // Asked again while still starting (a database that does not answer, say): give up now.
      process.stderr.write(`labdata: ${signal} again while starting: exiting\n`);
      process.exit(1);
    }
  };
  const onSignal = (signal: NodeJS.Signals) => shutdown(signal);
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  // Asked while the modules loaded (bin/labdata.js kept them): the same request, a moment earlier.
  for (const signal of takeEarlySignals()) shutdown(signal);
  let server: RunningServer;
  try {
    server = await startServer(config);
  } catch (err) {
    // One line naming the cause and the setting to change; never a stack trace.
    const known = err instanceof StartupError || err instanceof PluginLoadError;
    process.stderr.write(`labdata: ${known ? (err as Error).message : `could not start: ${firstLine(err)}`}\n`);
    process.exit(1);
  }
  clearTimeout(startupGivesUp);
  const { log } = server.runtime;
  let stoppingSince = 0;
  shutdown = (signal: NodeJS.Signals) => {
    if (stoppingSince) {
      if (Date.now() - stoppingSince < REPEAT_WINDOW_MS) return;
      // A second Ctrl-C: the operator does not want to wait (the database still stops: it
      // is killed with this process, see app/db/postgres-cluster.ts).
      log.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    stoppingSince = Date.now();
    log.info({ signal }, 'shutting down');
    setTimeout(() => {
      log.error({ graceMs: SHUTDOWN_GRACE_MS }, 'requests still running after the grace period: exiting');
      process.exit(1);
    }, SHUTDOWN_GRACE_MS).unref();
    server.stop().then(
      () => {
        log.info('stopped');
        process.exit(0);
      },
      (err) => {
        log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  if (requested) shutdown(requested);
}
