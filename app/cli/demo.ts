import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Runtime } from '../runtime.ts';
import { addMembership, createOrganization, createUser, issueKey } from './admin.ts';
import { applyBootstrap } from './bootstrap.ts';

/**
 * First start against an empty embedded database: a demo organization, an admin and a key,
 * so `npm install && npm start` ends with a working curl line. Never runs on a database that
 * already has an organization.
 */
export async function provisionDemo(runtime: Runtime) {
  if (!runtime.config.enterprise) return undefined;
  return runtime.orm.em.fork().transactional(async (tx) => {
    // Servers starting together on a fresh database: one provisions, the others then see its organization.
    await tx.execute(`select pg_advisory_xact_lock(hashtext('labdata demo'))`);
    const [{ n }] = await tx.execute<{ n: string }[]>('select count(*) as n from organization');
    if (Number(n) > 0) return undefined;
    const org = createOrganization(tx, 'Demo Lab');
    const user = await createUser(tx, 'admin@demo.lab', 'Demo Admin');
    addMembership(tx, { organizationId: org.id, userId: user.id, roles: ['ORGANIZATION_ADMIN'], status: 'ACTIVE' });
    await tx.flush();
    const key = await issueKey(tx, { userId: user.id, organizationId: org.id, name: 'demo', days: 30 }, true);
    if (runtime.kernel.plugins.some((p) => p.name === 'git')) {
      // Git without an outside service: bare repositories under the data dir, group `demo`.
      const rootPath = path.join(runtime.config.dataDir, 'git');
      await mkdir(path.join(rootPath, 'demo'), { recursive: true });
      const integration = { organization: org.id, type: 'GIT', name: 'Local Git (demo)', settings: { provider: 'LOCAL', rootPath } };
      await applyBootstrap(tx, { integrations: [integration] }, runtime.kernel);
    }
    return { organizationName: org.name, email: user.email, key: key.key };
  });
}
