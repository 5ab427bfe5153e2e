// Shared set-up of the storage plugin's tests: drives provisioned through the bootstrap file's
// `storageDrives` section (in process, on the test server's database), project helpers.
import { applyBootstrap } from '../../../app/cli/bootstrap.ts';
import type { Member, TestServer } from '../../support/server.ts';

export const PLUGINS = ['users', 'projects', 'studies', 'assay-types', 'assays', 'storage'];

/** Applies a bootstrap file (sections as in the contract) to the server's database. */
export async function bootstrap(server: TestServer, file: Record<string, unknown>): Promise<Record<string, any>> {
  return applyBootstrap(server.orm.em.fork(), file, server.kernel);
}

/** Drives by ref → id, made in one bootstrap file. */
export async function drives(server: TestServer, items: Record<string, unknown>[]): Promise<Record<string, string>> {
  const out = await bootstrap(server, { storageDrives: items });
  return Object.fromEntries(Object.entries(out.storageDrives ?? {}).map(([ref, v]) => [ref, (v as { id: string }).id]));
}

export function projectsApi(server: TestServer) {
  let n = 0;
  return {
    create: (who: Member, extra: Record<string, unknown> = {}, visibility = 'PRIVATE') =>
      server.post('/api/v1/projects', { code: `P-${++n}`, name: `Project ${n}`, description: 'Storage test', visibility, ...extra }, { key: who.key }),
    async status(who: Member, id: string): Promise<string> {
      return (await server.get(`/api/v1/projects/${id}`, { key: who.key })).body.status;
    },
    /** Waits until the project has `status` (provisioning runs in the job queue). */
    async waitFor(who: Member, id: string, status: string) {
      let last = '';
      await server.waitFor(async () => (last = await this.status(who, id)) === status, 30_000, `project ${id} to become ${status} (is ${last})`);
    },
    async folders(who: Member, id: string) {
      const res = await server.get(`/api/v1/projects/${id}/storage-folders`, { key: who.key });
      if (res.status !== 200) throw new Error(`folders of ${id}: ${res.status} ${res.text}`);
      return res.body.content as Record<string, any>[];
    },
  };
}

/** Activity rows of a project, oldest first. */
export async function activityOf(server: TestServer, projectId: string) {
  return server.sql<{ event_type: string; category: string; data: Record<string, any> }>(
    'select event_type, category, data from activity where project_id = ? order by date, id',
    [projectId],
  );
}
