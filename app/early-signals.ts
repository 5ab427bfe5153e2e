/**
 * The SIGINT/SIGTERM that bin/labdata.js kept while the server's modules loaded, in order, its
 * handlers removed. Call it with the process's own handlers in place: a signal received but not
 * yet dispatched then reaches them (with no listener left it would be dropped). None when the
 * process was started another way.
 */
export function takeEarlySignals(): NodeJS.Signals[] {
  const take = (process as unknown as Record<symbol, (() => NodeJS.Signals[]) | undefined>)[Symbol.for('labdata.earlySignals')];
  return take ? take() : [];
}
