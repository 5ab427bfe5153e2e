/**
 * Runs the plugins' background tasks (core/jobs `background`) in a serving process: each from
 * start until `stop()`, which aborts their signal and waits for them (before the pool closes). A
 * task that throws is logged and started again after a pause that grows up to a minute, so a
 * database outage does not become a busy loop.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Orm } from '../../core/db/orm.ts';
import { isConnectionFailure } from '../../core/db/errors.ts';
import type { JobQueue } from '../../core/jobs/index.ts';

const FIRST_PAUSE_MS = 1_000;
const LONGEST_PAUSE_MS = 60_000;

export class BackgroundTasks<S> {
  readonly #queue: JobQueue<S>;
  #controller: AbortController | undefined;
  #running: Promise<void>[] = [];

  constructor(queue: JobQueue<S>) {
    this.#queue = queue;
  }

  start(options: { orm: Orm; services: S; log: FastifyBaseLogger }): void {
    if (this.#controller) return;
    const controller = (this.#controller = new AbortController());
    this.#running = this.#queue.tasks.map((task) => {
      const log = options.log.child({ plugin: task.plugin, task: task.name });
      return (async () => {
        let pause = FIRST_PAUSE_MS;
        while (!controller.signal.aborted) {
          const began = Date.now();
          try {
            await task.run({ em: options.orm.em.fork(), services: options.services, log, signal: controller.signal });
          } catch (err) {
            if (controller.signal.aborted) break;
            if (isConnectionFailure(err)) log.warn({ reason: (err as Error).message }, 'background task: database unavailable; retrying');
            else log.error({ err }, 'background task failed; starting it again');
          }
          // A task that ran a good while before failing starts again soon; one that keeps failing, less often.
          if (Date.now() - began > LONGEST_PAUSE_MS) pause = FIRST_PAUSE_MS;
          await sleep(pause, controller.signal);
          pause = Math.min(pause * 2, LONGEST_PAUSE_MS);
        }
      })();
    });
  }

  async stop(): Promise<void> {
    this.#controller?.abort();
    this.#controller = undefined;
    await Promise.allSettled(this.#running);
    this.#running = [];
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });
}
