import { db, type EntityManager, errors, type KernelServices, type OperationContext, raw, type Sql, sql } from '../../core/public.ts';
import { linkExisting, StepFailedError, vendorEndpoint, verifyExisting, vendorStep, type ProvisioningStep, type StepContext, provisioning } from '../../lib/integrations/index.ts';
import { findIntegration } from '../integrations/extensions.ts';
import { HttpElnBConnector, type ElnBConnector } from './connector.ts';
import type { ProjectElnB } from './schemas.ts';

export const PLUGIN = 'eln-b';
/** Provisioning steps (README, "Provisioning"). */
export const ENTRY_STEP = 'eln-b.create-entry';
export const VERIFY_STEP = 'eln-b.verify-container';

/** A study or an assay getting an entry in its project's container. */
export interface ElnBRecord {
  kind: 'study' | 'assay';
  id: string;
  name: string;
  projectId: string;
}

interface LinkRow {
  recordId: string;
  integrationId: string;
  containerId: number;
  entryId: number | null;
}

// bigint comes back as text; vendor ids are JSON numbers (float8 holds every id up to 2^53 exactly).
const linkColumns = sql`record_id as "recordId", integration_id as "integrationId",
  container_id::float8 as "containerId", entry_id::float8 as "entryId"`;

// Mirrors ElnAService step for step: the shared parts live in lib/integrations (vendorEndpoint, linkExisting, vendorStep)
// and the integrations plugin (findIntegration); what is left differs by vendor (containers here, folders and templates there).
export class ElnBService {
  /** The connector of one of the organization's ELN_B integrations (404 unknown, 400 another type or unconfigured). */
  async connector(
    op: { em: EntityManager; services: KernelServices; actor: { organizationId: string } },
    integrationId: string,
    purpose: 'check' | 'provision',
    field?: string,
  ): Promise<ElnBConnector> {
    const integration = await findIntegration(op.em, op.actor.organizationId, integrationId, 'ELN_B', { secrets: op.services.secrets, field });
    return new HttpElnBConnector(vendorEndpoint('ELN B', integration, purpose, 'apiKey'));
  }

  async link(em: EntityManager, recordId: string): Promise<LinkRow | undefined> {
    return db.queryOne<LinkRow>(em, sql`select ${linkColumns} from eln_b_link where record_id = ${recordId}`);
  }

  /** Project create: link an existing container (checked now, or by a step when ELN B cannot be asked). */
  async linkProject(ctx: OperationContext, projectId: string, value: ProjectElnB): Promise<void> {
    const connector = await this.connector(ctx, value.integrationId, 'check', 'elnB.integrationId');
    const verified = await linkExisting(ctx, { kind: 'project', id: projectId }, {
      exists: () => connector.projectExists(value.projectId),
      field: 'elnB.projectId',
      missing: `project ${value.projectId} does not exist in ELN B`,
      verifyStep: VERIFY_STEP,
    });
    await this.#insert(ctx, projectId, 'project', value.integrationId, value.projectId);
    ctx.services.activity.record(ctx.em, ctx.actor, {
      eventType: 'eln_b.container_linked',
      projectId,
      data: { integrationId: value.integrationId, projectId: value.projectId, verified },
    });
  }

  /** The verify step of a project link accepted while ELN B could not be asked. */
  async runVerify(sctx: StepContext, step: ProvisioningStep): Promise<void> {
    const link = await this.link(sctx.em, step.recordId);
    if (!link) throw new StepFailedError('the project has no ELN B link any more');
    const { integrationId, containerId } = link;
    const connector = await vendorStep(() => this.connector(sctx, integrationId, 'provision'));
    await verifyExisting(() => connector.projectExists(containerId), `project ${containerId} does not exist in ELN B`);
    sctx.activity('eln_b.container_verified', { integrationId, projectId: containerId });
  }

  /**
   * `useElnB: true` on a study or an assay: an entry titled after the record in its project's
   * container (400 when the project has none), made by a provisioning step. `false`: nothing.
   */
  async provisionRecord(ctx: OperationContext, record: ElnBRecord, use: boolean): Promise<void> {
    if (!use) return;
    const project = await this.link(ctx.em, record.projectId);
    if (!project) {
      const message = `the ${record.kind}'s project ${record.projectId} has no ELN B container (create the project with elnB first)`;
      throw new errors.ValidationError([{ field: 'useElnB', message }]);
    }
    // The project's integration must still be there and usable (400/404 otherwise).
    await this.connector(ctx, project.integrationId, 'check', 'useElnB');
    await this.#insert(ctx, record.id, record.kind, project.integrationId, project.containerId);
    await provisioning(ctx.services).add(ctx, { kind: record.kind, id: record.id }, { step: ENTRY_STEP, payload: { title: record.name } });
  }

  /** The entry step; the idempotency key derived from the record makes a rerun get the same entry back. */
  async runEntry(sctx: StepContext, step: ProvisioningStep): Promise<{ entryId: number }> {
    const link = await this.link(sctx.em, step.recordId);
    if (!link) throw new StepFailedError(`the ${step.kind} has no ELN B link any more`);
    const { integrationId, containerId } = link;
    const connector = await vendorStep(() => this.connector(sctx, integrationId, 'provision'));
    const title = String(step.payload.title);
    const entry = await vendorStep(() => connector.createEntry(containerId, { title }, `labdata-${step.kind}-${step.recordId}-entry`));
    sctx.activity('eln_b.entry_created', { integrationId, projectId: containerId, entryId: entry.id, title });
    sctx.onComplete(async (em) => {
      await db.query(em, sql`update eln_b_link set entry_id = ${entry.id}, updated_at = now() where record_id = ${step.recordId}`);
    });
    return { entryId: entry.id };
  }

  async #insert(ctx: OperationContext, recordId: string, kind: string, integrationId: string, containerId: number): Promise<void> {
    await db.query(
      ctx.em,
      sql`insert into eln_b_link (record_id, organization_id, record_kind, integration_id, container_id)
          values (${recordId}, ${ctx.actor.organizationId}, ${kind}, ${integrationId}, ${containerId})`,
    );
  }

  /** The `elnB` response field of the record whose id is `id`, as JSON selected with the record. */
  linkJson(id: Sql, kind: 'project' | 'record'): Sql {
    const fields = kind === 'project' ? raw(`'integrationId', l.integration_id, 'projectId', l.container_id`)
      : raw(`'integrationId', l.integration_id, 'projectId', l.container_id, 'entryId', l.entry_id`);
    return sql`(select json_build_object(${fields}) from eln_b_link l where l.record_id = ${id})`;
  }

  /** Deleting a record forgets its link; the container and the entries in ELN B stay. */
  async unlink(em: EntityManager, ids: string[]): Promise<void> {
    await db.query(em, sql`delete from eln_b_link where record_id in (${ids})`);
  }
}
