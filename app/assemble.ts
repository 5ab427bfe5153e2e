import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../core/config.ts';
import { assembleKernel, type Kernel } from '../core/kernel/kernel.ts';
import type { PluginDefinition } from '../core/kernel/plugin.ts';
import { idempotencyMigrations } from './http/idempotency.ts';
import { authNotifyMigrations } from './http/auth-cache.ts';
import { secretBoxFor } from './secret-key.ts';

/**
 * The kernel with the deployment's plugins, its secret key, and what the HTTP surface keeps in
 * the database: the API-key cache's change notifications and the `Idempotency-Key` table.
 */
export function assembleDeployment(config: Config, plugins: PluginDefinition[], log: FastifyBaseLogger): Kernel {
  return assembleKernel(config, plugins, log, {
    migrations: [...authNotifyMigrations, ...idempotencyMigrations],
    secrets: secretBoxFor(config),
  });
}
