// The `labdata` process (bin/labdata.js imports this): one CLI run on this process's
// environment and streams (app/cli/cli.ts).
import { runCli } from './cli.ts';

const code = await runCli(process.argv.slice(2), { env: process.env, stdout: process.stdout, stderr: process.stderr });
// A failure exits at once: a half-started runtime (an embedded database that did not come up)
// may leave handles that would otherwise keep the process alive.
if (code !== 0) process.exit(code);
