import { definePlugin, type OperationContext } from '../../core/public.ts';
import { type RecordExtensions } from '../../lib/records/index.ts';
import { provisioning } from '../../lib/integrations/index.ts';
import { assayExtensions } from '../assays/extensions.ts';
import { projectExtensions } from '../projects/extensions.ts';
import { studyExtensions } from '../studies/extensions.ts';
import { events } from './events.ts';
import { migrations } from './migrations.ts';
import { ProjectElnB, ProjectElnBLink, RecordElnBLink, UseElnB } from './schemas.ts';
import { ElnBService, ENTRY_STEP, PLUGIN, VERIFY_STEP, type ElnBRecord } from './service.ts';

/** Vendor calls retry with backoff (2 s, 4 s, ... about 8 minutes in all) before the record fails. */
const retries = { retryLimit: 8, retryDelaySeconds: 2, retryBackoff: true };

/**
 * ELN platform B (project containers, no nested folders): `elnB` on projects (link an existing
 * container), `useElnB` on studies and assays (a notebook entry in the project's container).
 */
// Wired like eln-a (fields, outputs, delete hook, two executors): two vendors, two plugins that can be enabled apart.
export default definePlugin({
  name: PLUGIN,
  version: '1.0.0',
  description: "ELN platform B: a project's notebook container and entries for its studies and assays",
  dependsOn: ['integrations', 'projects', 'studies', 'assays'],
  migrations,
  events,
  setup(ctx) {
    const service = new ElnBService();
    const unlink = (op: OperationContext, records: { id: string }[]) => service.unlink(op.em, records.map((r) => r.id));

    const projects = ctx.use(projectExtensions);
    projects.addField({ name: 'elnB', plugin: PLUGIN, schema: ProjectElnB, save: (op, p, value) => service.linkProject(op, p.id, value as ProjectElnB) });
    projects.addOutput({ name: 'elnB', plugin: PLUGIN, schema: ProjectElnBLink, select: (id) => service.linkJson(id, 'project') });
    projects.beforeDelete(unlink);

    // Studies and assays take `useElnB` and show the entry it produced as `elnB`.
    function provisioned<R extends { id: string; name: string; projectId: string }>(kind: ElnBRecord['kind'], extensions: RecordExtensions<R>) {
      const save = (op: OperationContext, r: R, use: unknown) => service.provisionRecord(op, { kind, id: r.id, name: r.name, projectId: r.projectId }, use as boolean);
      extensions.addField({ name: 'useElnB', plugin: PLUGIN, schema: UseElnB, save });
      extensions.addOutput({ name: 'elnB', plugin: PLUGIN, schema: RecordElnBLink, select: (id) => service.linkJson(id, 'record') });
      extensions.beforeDelete(unlink);
    }
    provisioned('study', ctx.use(studyExtensions));
    provisioned('assay', ctx.use(assayExtensions));

    provisioning(ctx.services).executor(ENTRY_STEP, (sctx, step) => service.runEntry(sctx, step), retries);
    provisioning(ctx.services).executor(VERIFY_STEP, (sctx, step) => service.runVerify(sctx, step), retries);
  },
});
