/**
 * A function compiled on its first call: schema validators and serializers (routes, MCP tools)
 * are many, and a process calls few of them in its first seconds, so compiling them all at
 * start-up was most of its CPU.
 */
export function lazily<A extends unknown[], R>(compile: () => (...args: A) => R): (...args: A) => R {
  let fn: ((...args: A) => R) | undefined;
  return (...args) => (fn ??= compile())(...args);
}
