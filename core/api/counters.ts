/** `counters` of the kernel's entry point: exact page totals kept by triggers (core/counters). */
/** SQL reading a total: per visibility class of an organization, per record, and what an actor sees. */
export { classTotal, recordTotal, visibleTotal } from '../counters/index.ts';
/** The visibility classes every member sees. */
export { OPEN_CLASSES } from '../counters/index.ts';
/** A plugin's part of `labdata recount`: how to rebuild the counts of its rows. */
export type { CounterSource } from '../counters/index.ts';
