import { db, errors, fetchPage, type OperationContext, type PageRequest, raw, sql } from '../../core/public.ts';
import { publicFields } from '../../lib/integrations/index.ts';
import { publicSettingNames, type IntegrationType } from './schemas.ts';

export interface IntegrationRow {
  id: string;
  organizationId: string;
  type: IntegrationType;
  name: string;
  settings: Record<string, unknown>;
  /** Sealed; only `hasCredentials` reaches a response. */
  credentials: string | null;
  createdAt: Date | string;
  updatedAt: Date | string;
}

export interface PersonalIntegrationRow extends IntegrationRow {
  userId: string;
  status: 'ACTIVE' | 'ARCHIVED';
}

export const integrationColumns = raw(`i.id, i.organization_id as "organizationId", i.type, i.name, i.settings, i.credentials,
  i.created_at as "createdAt", i.updated_at as "updatedAt"`);
export const personalColumns = raw(`i.id, i.organization_id as "organizationId", i.user_id as "userId", i.type, i.name, i.settings,
  i.credentials, i.status, i.created_at as "createdAt", i.updated_at as "updatedAt"`);

/** The shown part: the type's public settings only (rows stored before the allow-list may hold more), never the credentials. */
export function toIntegrationDto(r: IntegrationRow) {
  return {
    id: r.id,
    organizationId: r.organizationId,
    type: r.type,
    name: r.name,
    settings: publicFields(r.settings, publicSettingNames(r.type)),
    hasCredentials: r.credentials !== null,
    createdAt: db.isoDate(r.createdAt)!,
    updatedAt: db.isoDate(r.updatedAt)!,
  };
}

export function toPersonalDto(r: PersonalIntegrationRow) {
  const { id, organizationId, type, name, settings, hasCredentials, createdAt, updatedAt } = toIntegrationDto(r);
  return { id, organizationId, userId: r.userId, type, name, settings, status: r.status, hasCredentials, createdAt, updatedAt };
}

export const integrationSort = {
  fields: { name: 'i.name', type: 'i.type', createdAt: 'i.created_at', updatedAt: 'i.updated_at' },
  default: ['name,asc'],
  tiebreaker: 'i.id',
};

export const personalSort = {
  fields: { createdAt: 'i.created_at', updatedAt: 'i.updated_at', name: 'i.name', type: 'i.type' },
  default: ['createdAt,desc'],
  tiebreaker: 'i.id',
};

export class IntegrationService {
  async list(ctx: OperationContext, page: PageRequest) {
    const from = sql`from integration i where i.organization_id = ${ctx.actor.organizationId}`;
    const { rows, total } = await fetchPage<IntegrationRow>(ctx.em, { columns: integrationColumns, from }, page);
    return { items: rows.map(toIntegrationDto), total };
  }

  async get(ctx: OperationContext, id: string) {
    const row = await db.queryOne<IntegrationRow>(
      ctx.em,
      sql`select ${integrationColumns} from integration i where i.id = ${id} and i.organization_id = ${ctx.actor.organizationId}`,
    );
    if (!row) throw new errors.NotFoundError('Integration', id);
    return toIntegrationDto(row);
  }

  /** The caller's own connections in the key's organization: never another user's. */
  #mine(ctx: OperationContext) {
    return sql`i.organization_id = ${ctx.actor.organizationId} and i.user_id = ${ctx.actor.userId} and i.status = 'ACTIVE'`;
  }

  async listMine(ctx: OperationContext, page: PageRequest) {
    const from = sql`from personal_integration i where ${this.#mine(ctx)}`;
    const { rows, total } = await fetchPage<PersonalIntegrationRow>(ctx.em, { columns: personalColumns, from }, page);
    return { items: rows.map(toPersonalDto), total };
  }

  async getMine(ctx: OperationContext, id: string) {
    const row = await db.queryOne<PersonalIntegrationRow>(ctx.em, sql`select ${personalColumns} from personal_integration i where i.id = ${id} and ${this.#mine(ctx)}`);
    if (!row) throw new errors.NotFoundError('Personal integration', id);
    return toPersonalDto(row);
  }

  /**
   * Disconnects: archived, its stored credentials deleted. Drives and folders it backed belong to
   * other plugins and stay as they are.
   */
  async deleteMine(ctx: OperationContext, id: string): Promise<void> {
    await db.writeTransaction(ctx.em, async (em) => {
      const row = await db.queryOne<PersonalIntegrationRow>(
        em,
        sql`update personal_integration i set status = 'ARCHIVED', credentials = null, archived_at = now(), updated_at = now()
              where i.id = ${id} and ${this.#mine(ctx)} returning ${personalColumns}`,
      );
      if (!row) throw new errors.NotFoundError('Personal integration', id);
      ctx.services.activity.record(em, ctx.actor, {
        eventType: 'personal_integration.disconnected',
        data: { integrationId: id, type: row.type, name: row.name },
      });
    });
  }
}
