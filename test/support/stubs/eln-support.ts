/** Helpers the ELN plugin tests share: integrations through the bootstrap file, waiting for provisioning. */
import type { Test } from 'tap';
import { applyBootstrap } from '../../../app/cli/bootstrap.ts';
import { startTestServer, type TestServer } from '../server.ts';

/**
 * A server with the record plugins, integrations and the given ELN plugins, job workers on; an
 * organization with an admin and two members (alice creates, bob only views), another
 * organization, and an ACTIVE assay type.
 */
export async function elnTestbed(t: Test, elnPlugins: string[]) {
  const server = await startTestServer(t, { plugins: ['users', 'projects', 'studies', 'assay-types', 'assays', 'integrations', ...elnPlugins], jobs: true });
  const org = await server.organization();
  const otherOrg = await server.organization();
  const admin = await server.admin(org);
  const alice = await server.member(org);
  const bob = await server.member(org);
  const assayType = created(await server.post('/api/v1/assay-types', { name: 'ELISA', status: 'ACTIVE' }, { key: admin.key }));
  return { server, org, otherOrg, admin, alice, bob, assayTypeId: assayType.id as string };
}

/** The body of a 201, or an error naming what went wrong. */
export function created(res: { status: number; text: string; body: any }): any {
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${res.text}`);
  return res.body;
}

/** `select count(*)::int as n ...` → n. */
export async function countRows(server: TestServer, sql: string, params: unknown[]): Promise<number> {
  const [row] = await server.sql<{ n: number }>(sql, params);
  return row.n;
}

/** Organization integrations, made through the integrations plugin's bootstrap section; ids by ref. */
export async function bootstrapIntegrations(server: TestServer, items: Record<string, unknown>[]): Promise<Record<string, string>> {
  const out = (await applyBootstrap(server.orm.em.fork(), { integrations: items }, server.kernel)) as Record<string, Record<string, { id: string }>>;
  return Object.fromEntries(Object.entries(out.integrations).map(([ref, v]) => [ref, v.id]));
}

/** One organization integration of `type` (through the bootstrap section); its id. */
export async function integration(server: TestServer, organization: string, type: string, settings: Record<string, unknown>, credentials: Record<string, unknown>) {
  const ids = await bootstrapIntegrations(server, [{ ref: 'it', organization, type, name: `${type} notebook`, settings, credentials }]);
  return ids.it;
}

/** GETs the record until its provisioning is settled (status no longer INITIALIZING), and returns it. */
export async function settled(server: TestServer, path: string, key: string): Promise<any> {
  let body: any;
  await server.waitFor(
    async () => {
      const res = await server.get(path, { key });
      body = res.body;
      return res.status === 200 && body.status !== 'INITIALIZING';
    },
    30_000,
    `${path} to leave INITIALIZING`,
  );
  return body;
}

/** Activity rows of a record (project, study or assay id), oldest first. */
export async function activityOf(server: TestServer, column: 'project_id' | 'study_id' | 'assay_id', id: string) {
  return server.sql<{ event_type: string; category: string; data: any; project_id: string; study_id: string | null; assay_id: string | null }>(
    `select event_type, category, data, project_id, study_id, assay_id from activity where ${column} = ? order by date, id`,
    [id],
  );
}
