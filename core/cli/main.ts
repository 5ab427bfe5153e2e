import fs from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { loadConfig, ConfigError } from '../config.ts';
import { openRuntime, type Runtime } from '../runtime.ts';
import { PluginLoadError } from '../kernel/loader.ts';
import { serve } from '../server.ts';
import { AdminError, issueKey, listKeys, revokeKey, setRoles, isUuid } from './admin.ts';
import { applyBootstrap } from './bootstrap.ts';

const USAGE = `usage: labdata <verb>
  serve                                   run the service (same as npm start)
  migrate                                 apply pending database migrations
  bootstrap FILE                          provision what FILE describes
  keys create --user USER_ID --organization ORG_ID --name NAME --days 7|30|90|365
  keys list --user USER_ID
  keys revoke KEY_ID
  roles set ORGANIZATION_USER_ID ROLE[,ROLE...]`;

function print(value: unknown) {
  process.stdout.write(JSON.stringify(value, null, 2) + '\n');
}

/** `jobs: 'queue'` for commands that migrate or may queue jobs (pg-boss); the others skip it. */
async function withRuntime<T>(fn: (runtime: Runtime) => Promise<T>, jobs: 'off' | 'queue' = 'off'): Promise<T> {
  const runtime = await openRuntime(loadConfig(), undefined, { jobs });
  try {
    return await fn(runtime);
  } finally {
    await runtime.close();
  }
}

async function keys(args: string[]) {
  const [action, ...rest] = args;
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: { user: { type: 'string' }, organization: { type: 'string' }, name: { type: 'string' }, days: { type: 'string' } },
  });
  const need = (name: keyof typeof values) => {
    const v = values[name];
    if (!v) throw new AdminError(`keys ${action}: --${name} is required`);
    return v;
  };
  if (action === 'create') {
    const userId = need('user');
    const organizationId = need('organization');
    const name = need('name');
    const days = Number(need('days'));
    if (!isUuid(userId) || !isUuid(organizationId)) throw new AdminError('keys create: --user and --organization must be UUIDs');
    return withRuntime(async (rt) => {
      const em = rt.orm.em.fork();
      const key = await em.transactional((tx) => issueKey(tx, { userId, organizationId, name, days }, rt.config.enterprise));
      print(key);
    });
  }
  if (action === 'list') {
    const userId = need('user');
    if (!isUuid(userId)) throw new AdminError('keys list: --user must be a UUID');
    return withRuntime(async (rt) => print(await listKeys(rt.orm.em.fork(), userId)));
  }
  if (action === 'revoke') {
    const [id] = positionals;
    if (!id) throw new AdminError('keys revoke: KEY_ID is required');
    return withRuntime(async (rt) => print(await revokeKey(rt.orm.em.fork(), id.replace(/^key_/, '').split('.')[0])));
  }
  throw new AdminError(`unknown keys action "${action ?? ''}" (create, list, revoke)`);
}

async function main(argv: string[]) {
  const [verb, ...args] = argv;
  switch (verb) {
    case 'serve':
      return serve(loadConfig());
    case 'migrate':
      return withRuntime(async (rt) => print({ migrations: 'up to date', plugins: rt.kernel.plugins.map((p) => p.name) }), 'queue');
    case 'bootstrap': {
      const [file] = args;
      if (!file) throw new AdminError('bootstrap: FILE is required');
      let parsed: unknown;
      try {
        parsed = JSON.parse(await fs.readFile(file, 'utf8'));
      } catch (e) {
        throw new AdminError(`bootstrap: cannot read ${file}: ${(e as Error).message.split('\n')[0]}`);
      }
      return withRuntime(async (rt) => print(await applyBootstrap(rt.orm.em.fork(), parsed, rt.kernel)), 'queue');
    }
    case 'keys':
      return keys(args);
    case 'roles': {
      const [action, organizationUserId, roles] = args;
      if (action !== 'set' || !organizationUserId || !roles) throw new AdminError('usage: roles set ORGANIZATION_USER_ID ROLE[,ROLE...]');
      return withRuntime(async (rt) => print(await setRoles(rt.orm.em.fork(), organizationUserId, roles.split(',').map((r) => r.trim()))));
    }
    default:
      // One line for a typo (the reason), the full usage only when asked for nothing.
      throw new AdminError(verb ? `unknown verb "${verb}" (verbs: serve, migrate, bootstrap, keys, roles)` : USAGE);
  }
}

main(process.argv.slice(2)).catch((err: Error) => {
  const known = err instanceof AdminError || err instanceof ConfigError || err instanceof PluginLoadError;
  process.stderr.write(`labdata: ${known ? err.message : `unexpected error: ${err.message.split('\n')[0]}`}\n`);
  process.exit(known ? 2 : 1);
});
