import type { FastifyInstance, RouteOptions } from 'fastify';

declare module 'fastify' {
  interface FastifyInstance {
    /** Resolves once no route handler is running (see trackHandlers). */
    handlersSettled(): Promise<void>;
  }
}

/**
 * Counts route handlers still running. Fastify's close() waits for connections, not handlers: a
 * client that gave up leaves its handler running, and closing the pool under it would fail its
 * next query (a write's transaction half done). Shutdown waits for `settled()` before the pool goes.
 */
export function trackHandlers(app: FastifyInstance): { settled(): Promise<void> } {
  let running = 0;
  const waiters: (() => void)[] = [];
  const done = () => {
    if (--running === 0) for (const resolve of waiters.splice(0)) resolve();
  };
  app.addHook('onRoute', (route: RouteOptions) => {
    const handler = route.handler;
    // Not async itself: a handler that answers through `reply` later must keep returning undefined.
    route.handler = function tracked(this: FastifyInstance, request, reply) {
      running++;
      let result: unknown;
      try {
        result = handler.call(this, request, reply);
      } catch (err) {
        done();
        throw err;
      }
      if (result instanceof Promise) return result.finally(done);
      done();
      return result;
    };
  });
  return {
    settled: () => (running === 0 ? Promise.resolve() : new Promise<void>((resolve) => void waiters.push(resolve))),
  };
}
