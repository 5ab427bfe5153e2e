/**
 * What other plugins (ELN A, ELN B, Git, storage) use of the integrations plugin: look up an
 * integration of a given type, with its credentials opened, to talk to the external system.
 */
import { db, type EntityManager, errors, type KernelServices, sql } from '../../core/public.ts';

type SecretBox = KernelServices['secrets'];
import type { VendorIntegration } from '../../lib/integrations/index.ts';
import { integrationColumns, personalColumns, type IntegrationRow, type PersonalIntegrationRow } from './service.ts';
import type { IntegrationType } from './schemas.ts';

export { INTEGRATION_TYPES, type IntegrationType } from './schemas.ts';

/** An integration ready to use: settings and opened credentials (never put these in a response or a log). */
export interface ResolvedIntegration extends VendorIntegration {
  organizationId: string;
  type: IntegrationType;
  name: string;
}

export interface FindOptions {
  /** `ctx.services.secrets` (opens the sealed credentials). */
  secrets: SecretBox;
  /** The request field holding the id (e.g. `elnA.integrationId`): a wrong type is then a 400 naming it. */
  field?: string;
}

function resolve(row: IntegrationRow, secrets: SecretBox): ResolvedIntegration {
  return {
    id: row.id,
    organizationId: row.organizationId,
    type: row.type,
    name: row.name,
    settings: row.settings ?? {},
    credentials: row.credentials === null ? null : secrets.open<Record<string, unknown>>(row.credentials),
  };
}

function checkType(row: { id: string; type: string }, type: IntegrationType | undefined, field: string | undefined) {
  if (!type || row.type === type) return;
  const message = `integration ${row.id} is of type ${row.type}, not ${type}`;
  throw field ? new errors.ValidationError([{ field, message }]) : new errors.BadRequestError(`The ${message}`);
}

/**
 * An organization integration: 404 when it is not one of the organization's, 400 when it is of
 * another type (naming `opts.field` when given).
 */
export async function findIntegration(
  em: EntityManager,
  organizationId: string,
  id: string,
  type: IntegrationType | undefined,
  opts: FindOptions,
): Promise<ResolvedIntegration> {
  const row = await db.queryOne<IntegrationRow>(
    em,
    sql`select ${integrationColumns} from integration i where i.id = ${id} and i.organization_id = ${organizationId}`,
  );
  if (!row) throw new errors.NotFoundError('Integration', id);
  checkType(row, type, opts.field);
  return resolve(row, opts.secrets);
}

/** Like `findIntegration`, but undefined instead of a 404 (e.g. a stored default that no longer resolves). */
export async function findIntegrationOrUndefined(
  em: EntityManager,
  organizationId: string,
  id: string,
  type: IntegrationType,
  opts: FindOptions,
): Promise<ResolvedIntegration | undefined> {
  const row = await db.queryOne<IntegrationRow>(
    em,
    sql`select ${integrationColumns} from integration i where i.id = ${id} and i.organization_id = ${organizationId} and i.type = ${type}`,
  );
  return row && resolve(row, opts.secrets);
}

/**
 * One of a user's ACTIVE personal connections in an organization: 404 when it is another user's,
 * archived (disconnected) or unknown; 400 when of another type.
 */
export async function findPersonalIntegration(
  em: EntityManager,
  owner: { organizationId: string; userId: string },
  id: string,
  type: IntegrationType | undefined,
  opts: FindOptions,
): Promise<ResolvedIntegration & { userId: string }> {
  const row = await db.queryOne<PersonalIntegrationRow>(
    em,
    sql`select ${personalColumns} from personal_integration i
          where i.id = ${id} and i.organization_id = ${owner.organizationId} and i.user_id = ${owner.userId} and i.status = 'ACTIVE'`,
  );
  if (!row) throw new errors.NotFoundError('Personal integration', id);
  checkType(row, type, opts.field);
  return { ...resolve(row, opts.secrets), userId: row.userId };
}
