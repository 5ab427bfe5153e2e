#!/usr/bin/env node
// Launcher: the CLI is TypeScript run by Node's type stripping (Node >= 22.18 by default;
// 22.17 needs the flag, so re-run with it there). Plain JS so an old Node gets a clear message.
import { spawnSync } from 'node:child_process';
import module from 'node:module';
import { fileURLToPath } from 'node:url';

const [major, minor] = process.versions.node.split('.').map(Number);
const main = fileURLToPath(new URL('../app/cli/main.ts', import.meta.url));
if (major < 22 || (major === 22 && minor < 17)) {
  process.stderr.write(`labdata: Node.js >= 22.17 is required (this is ${process.version})\n`);
  process.exit(2);
}
// The server's memory settings, however it is started (`npm start`, `labdata serve`, a service
// manager, a container): semi-spaces of 32 MB and an old generation of 256 MB keep its peak RSS
// near 250 MB under load, where V8's defaults for a large machine let it grow past 400 MB (16 MB
// semi-spaces saved 10 MB more but cost a fifth more CPU per read in scavenges). The
// launcher replaces itself (same pid: signals and service managers see one process) with a Node
// started with them, unless the operator gave their own heap settings.
const SERVE_FLAGS = ['--max-semi-space-size=32', '--max-old-space-size=256'];
const serving = process.argv[2] === 'serve';
const ownHeap = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)].some((f) => /^--max-(old|semi)-space-size/.test(f));
if (serving && !ownHeap && process.features.typescript && typeof process.execve === 'function') {
  try {
    process.execve(process.execPath, [process.execPath, ...process.execArgv, ...SERVE_FLAGS, ...process.argv.slice(1)], process.env);
  } catch {
    // A platform without execve serves with V8's defaults rather than not at all.
  }
}
if (process.features.typescript) {
  if (serving) {
    // Loading the modules takes a second or more: a stop requested meanwhile is kept, not
    // fatal, and the server honours it once started, as any stop during start-up (it takes
    // them through app/early-signals.ts once its own handlers are in place). A command's
    // signal while it loads ends it, as before: it has done nothing yet.
    const early = [];
    const keep = (signal) => early.push(signal);
    process.on('SIGINT', keep).on('SIGTERM', keep);
    process[Symbol.for('labdata.earlySignals')] = () => {
      process.off('SIGINT', keep).off('SIGTERM', keep);
      return early;
    };
  }
  // Compiled code is cached on disk (os.tmpdir()/node-compile-cache, or NODE_COMPILE_CACHE):
  // a CLI run or a restart then starts in about half the CPU time.
  module.enableCompileCache?.();
  await import(main);
} else {
  const flags = serving && !ownHeap ? SERVE_FLAGS : [];
  const r = spawnSync(process.execPath, ['--experimental-strip-types', '--no-warnings', ...flags, main, ...process.argv.slice(2)], { stdio: 'inherit' });
  process.exit(r.status ?? 1);
}
