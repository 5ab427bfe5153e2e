import { db, type EntityManager, errors, type KernelServices, type OperationContext, raw, type Sql, sql } from '../../core/public.ts';
import { askVendor, linkExisting, StepFailedError, vendorEndpoint, verifyExisting, vendorStep, type ProvisioningStep, type StepContext, provisioning } from '../../lib/integrations/index.ts';
import { findIntegration } from '../integrations/extensions.ts';
import { HttpElnAConnector, type ElnAConnector } from './connector.ts';
import type { ProjectElnA, RecordElnA } from './schemas.ts';

export const PLUGIN = 'eln-a';
/** Provisioning steps (README, "Provisioning"). */
export const CREATE_STEP = 'eln-a.create-folder-and-entry';
export const VERIFY_STEP = 'eln-a.verify-folder';

/** A study or an assay getting a folder and an entry under its parent's (project's / study's) folder. */
export interface ElnARecord {
  kind: 'study' | 'assay';
  id: string;
  name: string;
  parentId: string;
}

/** What the create step keeps in its payload. */
interface CreatePayload {
  name: string;
  parentId: string;
  parentKind: string;
}

interface LinkRow {
  recordId: string;
  integrationId: string;
  folderId: string | null;
  entryId: string | null;
  templateId: string | null;
  templateFields: Record<string, unknown> | null;
}

const linkColumns = sql`record_id as "recordId", integration_id as "integrationId", folder_id as "folderId", entry_id as "entryId",
  template_id as "templateId", template_fields as "templateFields"`;

/** Who asks: a request (OperationContext) or a provisioning step (StepContext). */
type Caller = { em: EntityManager; services: KernelServices; actor: { organizationId: string } };

export class ElnAService {
  /** The connector of one of the organization's ELN_A integrations (404 unknown, 400 another type or unconfigured). */
  async connector(op: Caller, integrationId: string, purpose: 'check' | 'provision', field?: string): Promise<ElnAConnector> {
    const integration = await findIntegration(op.em, op.actor.organizationId, integrationId, 'ELN_A', { secrets: op.services.secrets, field });
    return new HttpElnAConnector(vendorEndpoint('ELN A', integration, purpose, 'token'));
  }

  async link(em: EntityManager, recordId: string): Promise<LinkRow | undefined> {
    return db.queryOne<LinkRow>(em, sql`select ${linkColumns} from eln_a_link where record_id = ${recordId}`);
  }

  /** Project create: link an existing folder (checked now, or by a step when ELN A cannot be asked). */
  async linkProject(ctx: OperationContext, projectId: string, value: ProjectElnA): Promise<void> {
    const connector = await this.connector(ctx, value.integrationId, 'check', 'elnA.integrationId');
    const verified = await linkExisting(ctx, { kind: 'project', id: projectId }, {
      exists: () => connector.folderExists(value.folderId),
      field: 'elnA.folderId',
      missing: `folder ${value.folderId} does not exist in ELN A`,
      verifyStep: VERIFY_STEP,
    });
    await this.#insert(ctx, { recordId: projectId, kind: 'project', integrationId: value.integrationId, folderId: value.folderId });
    ctx.services.activity.record(ctx.em, ctx.actor, {
      eventType: 'eln_a.folder_linked',
      projectId,
      data: { integrationId: value.integrationId, folderId: value.folderId, verified },
    });
  }

  /** The verify step of a project link accepted while ELN A could not be asked. */
  async runVerify(sctx: StepContext, step: ProvisioningStep): Promise<void> {
    const link = await this.link(sctx.em, step.recordId);
    if (!link?.folderId) throw new StepFailedError('the project has no ELN A link any more');
    const { integrationId, folderId } = link;
    const connector = await vendorStep(() => this.connector(sctx, integrationId, 'provision'));
    await verifyExisting(() => connector.folderExists(folderId), `folder ${folderId} does not exist in ELN A`);
    sctx.activity('eln_a.folder_verified', { integrationId, folderId });
  }

  /**
   * Study/assay create: inherits the parent's integration (project for a study, study for an
   * assay) — 400 when the parent has no ELN A folder. The template (if any) is checked at once
   * when ELN A answers; the folder and the entry are made by a provisioning step.
   */
  async provisionRecord(ctx: OperationContext, record: ElnARecord, value: RecordElnA): Promise<void> {
    const parentKind = record.kind === 'study' ? 'project' : 'study';
    if (value.templateFields && value.templateId === undefined) {
      throw new errors.ValidationError([{ field: 'elnA.templateFields', message: 'needs elnA.templateId (a blank entry has no fields)' }]);
    }
    const parent = await this.link(ctx.em, record.parentId);
    if (!parent) {
      const message = `the ${record.kind}'s ${parentKind} ${record.parentId} has no ELN A folder (create the ${parentKind} with elnA first)`;
      throw new errors.ValidationError([{ field: 'elnA', message }]);
    }
    const connector = await this.connector(ctx, parent.integrationId, 'check', 'elnA');
    if (value.templateId !== undefined) await this.#checkTemplate(connector, value.templateId, value.templateFields ?? {});
    await this.#insert(ctx, {
      recordId: record.id,
      kind: record.kind,
      integrationId: parent.integrationId,
      templateId: value.templateId ?? null,
      templateFields: value.templateFields ?? null,
    });
    const payload: CreatePayload = { name: record.name, parentId: record.parentId, parentKind };
    await provisioning(ctx.services).add(ctx, { kind: record.kind, id: record.id }, { step: CREATE_STEP, payload: { ...payload } });
  }

  /** 400 for a template or template field ELN A does not know; no answer: checked again when the entry is made. */
  async #checkTemplate(connector: ElnAConnector, templateId: string, fields: Record<string, unknown>): Promise<void> {
    const check = await askVendor(() => connector.template(templateId));
    if (!check.answered) return;
    if (!check.value) throw new errors.ValidationError([{ field: 'elnA.templateId', message: `template ${templateId} does not exist in ELN A` }]);
    const known = new Set(check.value.fields);
    const unknown = Object.keys(fields).filter((f) => !known.has(f));
    if (unknown.length) {
      throw new errors.ValidationError(unknown.map((f) => ({ field: `elnA.templateFields.${f}`, message: `is not a field of template ${templateId}` })));
    }
  }

  /**
   * The create step: a folder named after the record under the parent's folder, then an entry
   * in it. Each vendor call carries an idempotency key derived from the record, and the folder id
   * is kept as progress at once, so a rerun (retry, restart) never makes a second one.
   */
  async runCreate(sctx: StepContext, step: ProvisioningStep): Promise<{ folderId: string; entryId: string }> {
    const { name, parentId, parentKind } = step.payload as unknown as CreatePayload;
    const link = await this.link(sctx.em, step.recordId);
    if (!link) throw new StepFailedError(`the ${step.kind} has no ELN A link any more`);
    const parent = await this.link(sctx.em, parentId);
    if (!parent) throw new StepFailedError(`the ${parentKind} ${parentId} has no ELN A folder any more`);
    // The parent study's own step has not made its folder yet: the queue tries again later.
    if (!parent.folderId) throw new Error(`the ${parentKind}'s ELN A folder is not created yet`);
    const parentFolderId = parent.folderId;
    const connector = await vendorStep(() => this.connector(sctx, link.integrationId, 'provision'));
    const key = `labdata-${step.kind}-${step.recordId}`;

    let folderId = step.result?.folderId as string | undefined;
    if (!folderId) {
      folderId = (await vendorStep(() => connector.createFolder({ parentId: parentFolderId, name }, `${key}-folder`))).id;
      await sctx.progress({ folderId });
    }
    const template = link.templateId === null ? {} : { templateId: link.templateId, fields: link.templateFields ?? {} };
    const entryId = (await vendorStep(() => connector.createEntry({ folderId, name, ...template }, `${key}-entry`))).id;

    const data = { integrationId: link.integrationId, folderId };
    sctx.activity('eln_a.folder_created', { ...data, parentFolderId, name });
    sctx.activity('eln_a.entry_created', { ...data, entryId, templateId: link.templateId });
    sctx.onComplete(async (em) => {
      await db.query(em, sql`update eln_a_link set folder_id = ${folderId}, entry_id = ${entryId}, updated_at = now() where record_id = ${step.recordId}`);
    });
    return { folderId, entryId };
  }

  async #insert(ctx: OperationContext, row: Partial<LinkRow> & { recordId: string; kind: string; integrationId: string }): Promise<void> {
    await db.query(
      ctx.em,
      sql`insert into eln_a_link (record_id, organization_id, record_kind, integration_id, folder_id, template_id, template_fields)
          values (${row.recordId}, ${ctx.actor.organizationId}, ${row.kind}, ${row.integrationId}, ${row.folderId ?? null},
                  ${row.templateId ?? null}, ${row.templateFields ? JSON.stringify(row.templateFields) : null}::jsonb)`,
    );
  }

  /** The `elnA` response field of the record whose id is `id`, as JSON selected with the record. */
  linkJson(id: Sql, kind: 'project' | 'record'): Sql {
    const fields = kind === 'project' ? raw(`'integrationId', l.integration_id, 'folderId', l.folder_id`)
      : raw(`'integrationId', l.integration_id, 'folderId', l.folder_id, 'entryId', l.entry_id, 'templateId', l.template_id`);
    return sql`(select json_build_object(${fields}) from eln_a_link l where l.record_id = ${id})`;
  }

  /** Deleting a record forgets its link; the folder and the entry in ELN A stay. */
  async unlink(em: EntityManager, ids: string[]): Promise<void> {
    await db.query(em, sql`delete from eln_a_link where record_id in (${ids})`);
  }
}
