import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import t from 'tap';
import { startTestServer } from '../support/server.ts';
import { startAuthProxy } from '../support/auth-proxy.ts';

// The official MCP conformance suite (its CLI, in server mode) against /mcp. It cannot send
// headers, so it goes through a localhost proxy that adds the API key.
const server = await startTestServer(t);
const org = await server.organization();
const member = await server.member(org);
const proxy = await startAuthProxy(server.url, member.key);
t.teardown(() => proxy.close());

function conformanceBin(): string {
  const require = createRequire(import.meta.url);
  const pkgPath = require.resolve('@modelcontextprotocol/conformance/package.json');
  const pkg = require(pkgPath) as { bin: { conformance: string } };
  return join(dirname(pkgPath), pkg.bin.conformance);
}

/** Runs the CLI with this node binary; resolves with its exit code and output. */
function conformance(args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [conformanceBin(), ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      // Plain output to match on (the CLI colours its report).
      env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' },
    });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, output }));
  });
}

// The scenarios that apply to a read-only, tools-only server. The others need the SDK's
// "everything server" fixtures (prompts, resources, sampling, test_* tools).
const scenarios = ['server-initialize', 'ping', 'tools-list', 'dns-rebinding-protection'];

const runs = await Promise.all(scenarios.map((scenario) => conformance(['server', '--url', `${proxy.url}/mcp`, '--scenario', scenario])));

for (const [i, scenario] of scenarios.entries()) {
  t.test(`conformance scenario ${scenario} passes`, async (t) => {
    const { code, output } = runs[i];
    t.equal(code, 0, output);
    const summary = /Passed: (\d+)\/(\d+), (\d+) failed, (\d+) warnings/.exec(output);
    t.ok(summary, 'a results summary');
    const [, passed, total, failed, warnings] = summary!.map(Number);
    t.ok(passed > 0 && passed === total, `every check passed (${passed}/${total})`);
    t.same([failed, warnings], [0, 0], 'no failures, no warnings');
  });
}

t.test('without the key-adding proxy the suite is refused (401)', async (t) => {
  const { code, output } = await conformance(['server', '--url', `${server.url}/mcp`, '--scenario', 'ping']);
  t.not(code, 0, 'the scenario fails');
  t.match(output, /Error POSTing to endpoint/, 'on the refused POST');
});
