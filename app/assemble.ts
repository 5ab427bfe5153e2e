import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../core/config.ts';
import { assembleKernel, type Kernel } from '../core/kernel/kernel.ts';
import type { PluginDefinition } from '../core/kernel/plugin.ts';
import { idempotencyMigrations } from './http/idempotency.ts';
import { authNotifyMigrations } from './http/auth-cache.ts';
import { secretBoxFor } from './secret-key.ts';
import { provisioningMigrations } from '../lib/integrations/index.ts';

/**
 * The kernel with the deployment's plugins, its secret key, and the tables kept by what is not the
 * kernel's: provisioning steps (lib/integrations), the API-key cache's change notifications and
 * the `Idempotency-Key` table (app/http). They run after the kernel's migrations, before the plugins'.
 */
export function assembleDeployment(config: Config, plugins: PluginDefinition[], log: FastifyBaseLogger): Kernel {
  return assembleKernel(config, plugins, log, {
    migrations: [...provisioningMigrations, ...authNotifyMigrations, ...idempotencyMigrations],
    secrets: secretBoxFor(config),
  });
}
