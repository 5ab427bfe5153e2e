// Projects, studies and assays to attach records to (external links, notes), made through the API.
import type { Member, TestServer } from '../../support/server.ts';

export interface Parents {
  project: { id: string };
  study: { id: string };
  assay: { id: string };
}

export function records(server: TestServer) {
  async function created<T = { id: string }>(path: string, body: unknown, who: Member): Promise<T> {
    const res = await server.post('/api/v1' + path, body, { key: who.key });
    if (res.status !== 201) throw new Error(`POST ${path} failed: ${res.status} ${res.text}`);
    return res.body as T;
  }
  const assayTypes = new Map<string, string>(); // organization → an ACTIVE assay type of it
  return {
    project: (owner: Member, visibility = 'PRIVATE') =>
      created('/projects', { code: 'P', name: 'Project', description: 'For attachments', visibility }, owner),
    study: (owner: Member, projectId: string) => created('/studies', { projectId, name: 'Study' }, owner),
    async assay(owner: Member, studyId: string, admin: Member) {
      let assayTypeId = assayTypes.get(admin.organizationId);
      if (!assayTypeId) assayTypes.set(admin.organizationId, (assayTypeId = (await created('/assay-types', { name: 'ELISA', status: 'ACTIVE' }, admin)).id));
      return created('/assays', { studyId, assayTypeId, name: 'Assay' }, owner);
    },
    /** A project of `owner` with a study and an assay in it. */
    async tree(owner: Member, admin: Member, visibility = 'PRIVATE'): Promise<Parents> {
      const project = await this.project(owner, visibility);
      const study = await this.study(owner, project.id);
      const assay = await this.assay(owner, study.id, admin);
      return { project, study, assay };
    },
  };
}

/** The REST base of each parent of a tree (`/projects/{id}`, ...), with its kind. */
export function bases(p: Parents): { kind: 'project' | 'study' | 'assay'; id: string; base: string }[] {
  return [
    { kind: 'project', id: p.project.id, base: `/projects/${p.project.id}` },
    { kind: 'study', id: p.study.id, base: `/studies/${p.study.id}` },
    { kind: 'assay', id: p.assay.id, base: `/assays/${p.assay.id}` },
  ];
}
