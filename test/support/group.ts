// Runs several test files in one process, one after the other, for `npm test`'s full run
// (test/support/run.ts writes the group files that call this). Loading the ~1,600 modules of
// tap, the kernel and the plugins costs a test process about 1.5 s of CPU before its first
// assertion; on a 2-core machine that was a third of the suite's time.
//
// Each file runs inside a subtest named after it, exactly as it would run alone: the `t` it
// imports from 'tap' is that subtest (a resolve hook answers its `import t from 'tap'` with a
// module of its own), so its servers and databases are torn down when the file's tests end,
// before the next file starts, and a failure is reported under the file's name.
import module from 'node:module';
import { relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import t, { type Test } from 'tap';

const SHIM = 'labdata-test-group:tap/';
/** Per file, the test it gets as `t`; the shim modules read it from here. */
const tests: Test[] = [];
const registry = Symbol.for('labdata.testGroup.tests');
(globalThis as Record<symbol, unknown>)[registry] = tests;

/** The same per-file limit as a file run alone (.taprc `timeout`), for each file of the group. */
const FILE_TIMEOUT_MS = 180_000;

export async function runGroup(projectRoot: string, files: string[]): Promise<void> {
  const owners = new Map<string, number>();
  module.registerHooks({
    resolve(specifier, context, next) {
      const index = specifier === 'tap' && context.parentURL ? owners.get(context.parentURL) : undefined;
      return index === undefined ? next(specifier, context) : { url: `${SHIM}${index}`, shortCircuit: true };
    },
    load(url, context, next) {
      if (!url.startsWith(SHIM)) return next(url, context);
      const index = Number(url.slice(SHIM.length));
      const source = `export default globalThis[Symbol.for('labdata.testGroup.tests')][${index}];`;
      return { format: 'module', source, shortCircuit: true };
    },
  });
  // tap's per-process limit was set for one file.
  t.setTimeout(FILE_TIMEOUT_MS * files.length);
  for (const [index, file] of files.entries()) {
    const url = pathToFileURL(file).href;
    owners.set(url, index);
    await t.test(relative(projectRoot, file), { timeout: FILE_TIMEOUT_MS }, async (sub) => {
      tests[index] = sub;
      await import(url);
    });
  }
}
