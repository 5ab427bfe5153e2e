import type { Runtime } from '../runtime.ts';
import { addMembership, createOrganization, createUser, issueKey } from './admin.ts';

/**
 * First start against an empty embedded database: a demo organization, an admin and a key,
 * so `npm install && npm start` ends with a working curl line. Never runs on a database that
 * already has an organization.
 */
export async function provisionDemo(runtime: Runtime) {
  const em = runtime.orm.em.fork();
  const [{ n }] = await em.execute<{ n: string }[]>('select count(*) as n from organization');
  if (Number(n) > 0 || !runtime.config.enterprise) return undefined;
  return em.transactional(async (tx) => {
    const org = createOrganization(tx, 'Demo Lab');
    const user = await createUser(tx, 'admin@demo.lab', 'Demo Admin');
    addMembership(tx, { organizationId: org.id, userId: user.id, roles: ['ORGANIZATION_ADMIN'], status: 'ACTIVE' });
    await tx.flush();
    const key = await issueKey(tx, { userId: user.id, organizationId: org.id, name: 'demo', days: 30 }, true);
    return { organizationName: org.name, email: user.email, key: key.key };
  });
}
