import type { EntitySchema } from '@mikro-orm/core';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../config.ts';
import { ActivityService } from '../activity/index.ts';
import { PermissionService } from '../permissions/index.ts';
import { CounterService } from '../counters/index.ts';
import { JobQueue } from '../jobs/index.ts';
import { SecretBox } from '../secrets.ts';
import { kernelEntities } from '../entities/index.ts';
import { lookupOrganizationUsers } from '../entities/dto.ts';
import { kernelMigrations } from '../entities/migrations.ts';
import type { MigrationDefinition } from '../db/orm.ts';
import { ExtensionRegistry } from './extension-points.ts';
import { Startup } from './startup.ts';
import { PluginLoadError } from './loader.ts';
import type { ReadDefinition, WriteDefinition } from './operations.ts';
import type { PluginDefinition } from './plugin.ts';
import type { KernelServices, OperationContext } from './services.ts';

/** The assembled deployment: kernel services plus everything the enabled plugins declared. */
export interface Kernel {
  plugins: PluginDefinition[];
  services: KernelServices;
  entities: EntitySchema<any, any>[];
  migrations: MigrationDefinition[];
  reads: ReadDefinition[];
  writes: WriteDefinition[];
}

/** What the process hands the kernel besides the plugins (app/assemble.ts). */
export interface KernelHost {
  /** The tables of the process's own parts: run after the kernel's migrations, before the plugins'. */
  migrations?: MigrationDefinition[];
  /** `services.secrets`, with the deployment's key. */
  secrets?: SecretBox;
}

/**
 * Boots the plugins in two phases (Backstage style): every plugin's `setup` in dependency
 * order (extension points), then the extension points freeze and every `register` declares its
 * operations; when the last returns, start-up ends and every registry freezes (`Startup`).
 * Nothing touches Fastify or the database here.
 */
export function assembleKernel(config: Config, plugins: PluginDefinition[], log: FastifyBaseLogger, host: KernelHost = {}): Kernel {
  const startup = new Startup();
  const activity = new ActivityService<OperationContext>(startup);
  const jobs = new JobQueue<KernelServices>(startup);
  const services: KernelServices = {
    config,
    startup,
    permissions: new PermissionService(),
    counters: new CounterService(startup),
    activity,
    jobs,
    organizationUsers: { get: lookupOrganizationUsers },
    secrets: host.secrets ?? new SecretBox(() => {
      throw new Error('no secret key was given to the kernel (assembleKernel: host.secrets)');
    }),
  };
  const extensions = new ExtensionRegistry();
  const reads: ReadDefinition[] = [];
  const writes: WriteDefinition[] = [];
  const entities = [...kernelEntities] as EntitySchema<any, any>[];
  const migrations = [...kernelMigrations, ...(host.migrations ?? [])];

  for (const plugin of plugins) {
    entities.push(...(plugin.entities ?? []));
    for (const m of plugin.migrations ?? []) {
      if (!m.name.startsWith(`${plugin.name}-`)) throw new PluginLoadError(`migration "${m.name}" of plugin ${plugin.name} must start with "${plugin.name}-"`);
      migrations.push(m);
    }
    inPlugin(plugin.name, 'declaring its events', () => services.activity.declare(plugin.name, plugin.events ?? {}));
  }
  const states = new Map<PluginDefinition, unknown>();
  const owners = new Map<ReadDefinition | WriteDefinition, string>();
  for (const plugin of plugins) {
    const state = inPlugin(plugin.name, 'setup', () => plugin.setup?.({
      plugin: plugin.name,
      services,
      log: log.child({ plugin: plugin.name }),
      provide: (point, impl) => extensions.provide(plugin.name, point, impl),
      use: (point) => extensions.use(plugin.name, point),
      find: (point) => extensions.find(point),
    }));
    states.set(plugin, state);
  }
  extensions.freeze();
  for (const plugin of plugins) {
    inPlugin(plugin.name, 'register', () => plugin.register?.({
      plugin: plugin.name,
      services,
      log: log.child({ plugin: plugin.name }),
      read: (def) => {
        startup.assertOpen(`operation ${def.name}`);
        reads.push(def);
        owners.set(def, plugin.name);
      },
      write: (def) => {
        startup.assertOpen(`operation ${def.operationId}`);
        writes.push(def);
        owners.set(def, plugin.name);
      },
    }, states.get(plugin)));
  }
  assertDistinct(owners);
  // Registries outside the kernel close here: `register` may still add to them (delete cascades).
  startup.end();
  return { plugins, services, entities, migrations, reads, writes };
}

/**
 * Runs one plugin's phase; what it throws becomes one start-up line naming the plugin. A phase
 * that returns a Promise is refused: start-up does not wait, so its registrations would come late.
 */
function inPlugin<T>(plugin: string, phase: string, run: () => T): T {
  let result: T;
  try {
    result = run();
  } catch (err) {
    if (err instanceof PluginLoadError) throw err;
    throw new PluginLoadError(`plugin ${plugin} failed in ${phase}: ${String((err as Error)?.message ?? err).split('\n')[0]}`);
  }
  if (result instanceof Promise) {
    result.catch(() => {});
    throw new PluginLoadError(`plugin ${plugin}: ${phase} must be synchronous (it returned a Promise)`);
  }
  return result;
}

/**
 * Two operations with one name (the MCP tool and operationId) or one route would fail only when
 * the HTTP app is built, after migrations ran: refused here, naming both plugins.
 */
function assertDistinct(owners: Map<ReadDefinition | WriteDefinition, string>): void {
  const seen = new Map<string, string>();
  for (const [def, plugin] of owners) {
    const [name, method] = 'operationId' in def ? [def.operationId, def.method] : [def.name, 'GET'];
    // Parameter names do not tell routes apart: `/things/:id` and `/things/:thingId` are one route.
    const route = `${method} ${def.path.replace(/:\w+/g, ':')}`;
    for (const [key, label] of [[`operation ${name}`, `operation "${name}"`], [`route ${route}`, `route ${method} ${def.path}`]]) {
      const first = seen.get(key);
      if (first === plugin) throw new PluginLoadError(`${label} is declared twice by plugin ${plugin}`);
      if (first !== undefined) throw new PluginLoadError(`${label} is declared by both plugin ${first} and plugin ${plugin}`);
      seen.set(key, plugin);
    }
  }
}
