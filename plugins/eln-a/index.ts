import { definePlugin, type OperationContext } from '../../core/public.ts';
import { type RecordExtensions } from '../../lib/records/index.ts';
import { provisioning } from '../../lib/integrations/index.ts';
import { assayExtensions } from '../assays/extensions.ts';
import { projectExtensions } from '../projects/extensions.ts';
import { studyExtensions } from '../studies/extensions.ts';
import { events } from './events.ts';
import { migrations } from './migrations.ts';
import { ProjectElnA, ProjectElnALink, RecordElnA, RecordElnALink } from './schemas.ts';
import { CREATE_STEP, ElnAService, PLUGIN, VERIFY_STEP, type ElnARecord } from './service.ts';

/** Vendor calls retry with backoff (2 s, 4 s, ... about 8 minutes in all) before the record fails. */
const retries = { retryLimit: 8, retryDelaySeconds: 2, retryBackoff: true };

/**
 * ELN platform A (folders and templates): `elnA` on projects (link an existing folder), and on
 * studies and assays (a new folder under the parent's folder and a notebook entry in it).
 */
export default definePlugin({
  name: PLUGIN,
  version: '1.0.0',
  description: 'ELN platform A: notebook folders and entries for projects, studies and assays',
  dependsOn: ['integrations', 'projects', 'studies', 'assays'],
  migrations,
  events,
  setup(ctx) {
    const service = new ElnAService();
    const unlink = (op: OperationContext, records: { id: string }[]) => service.unlink(op.em, records.map((r) => r.id));

    const projects = ctx.use(projectExtensions);
    projects.addField({ name: 'elnA', plugin: PLUGIN, schema: ProjectElnA, save: (op, p, value) => service.linkProject(op, p.id, value as ProjectElnA) });
    projects.addOutput({ name: 'elnA', plugin: PLUGIN, schema: ProjectElnALink, select: (id) => service.linkJson(id, 'project') });
    projects.beforeDelete(unlink);

    /** Studies and assays: the same field, a folder under their parent's folder. */
    function provisioned<R extends { id: string }>(extensions: RecordExtensions<R>, toRecord: (record: R) => ElnARecord) {
      extensions.addField({ name: 'elnA', plugin: PLUGIN, schema: RecordElnA, save: (op, r, value) => service.provisionRecord(op, toRecord(r), value as RecordElnA) });
      extensions.addOutput({ name: 'elnA', plugin: PLUGIN, schema: RecordElnALink, select: (id) => service.linkJson(id, 'record') });
      extensions.beforeDelete(unlink);
    }
    provisioned(ctx.use(studyExtensions), (s) => ({ kind: 'study', id: s.id, name: s.name, parentId: s.projectId }));
    provisioned(ctx.use(assayExtensions), (a) => ({ kind: 'assay', id: a.id, name: a.name, parentId: a.studyId }));

    provisioning(ctx.services).executor(CREATE_STEP, (sctx, step) => service.runCreate(sctx, step), retries);
    provisioning(ctx.services).executor(VERIFY_STEP, (sctx, step) => service.runVerify(sctx, step), retries);
  },
});
