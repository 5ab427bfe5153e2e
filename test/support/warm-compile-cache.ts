// Run by test/support/run.ts while the test database starts: loads the modules every test process
// loads, so that Node's compile cache (NODE_COMPILE_CACHE) holds them before the first test
// processes start. Otherwise each process of the first wave compiles all of them itself.
import { loadConfig } from '../../core/config.ts';
import { loadDeploymentPlugins } from '../../app/plugins.ts';

await Promise.all([
  import('./server.ts'),
  import('./mcp.ts'),
  import('../../app/server.ts'),
  import('../../app/cli/cli.ts'),
  import('../../app/runtime.ts'),
  import('pg-boss'),
  import('@mikro-orm/migrations'),
]);
await loadDeploymentPlugins(loadConfig().plugins);
