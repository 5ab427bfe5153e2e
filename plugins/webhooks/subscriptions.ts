import crypto from 'node:crypto';
import { type Actor, counters, db, errors, fetchPage, type KernelServices, type OperationContext, type PageRequest, raw, type Sql, sql } from '../../core/public.ts';
import { hostProblem, urlHost, type AddressPolicy } from '../../lib/integrations/index.ts';
import { TEST_EVENT } from './events.ts';
import type { CreateWebhook, DeliveryStatus, UpdateWebhook } from './schemas.ts';
import type { WebhookSettings } from './settings.ts';

/** The spec's admin role: only an active admin's subscriptions deliver (README, "Who sees what"). */
export const ADMIN_ROLE = 'ORGANIZATION_ADMIN';

/** SQL condition on the creator's organization user aliased `ou`: they may still receive events. */
export const creatorMayReceive = raw(`coalesce(ou.status = 'ACTIVE' and '${ADMIN_ROLE}' = any(ou.roles), false)`);

/** How long the old secret keeps signing after a rotation. */
const ROTATION_OVERLAP = `interval '24 hours'`;

const columns = sql`s.id, s.url, s.event_types, s.categories, s.description, s.active, s.created_by_id, s.disabled_at, s.created_at, s.updated_at,
  not ${creatorMayReceive} as paused`;
const from = raw('from webhook_subscription s left join organization_user ou on ou.id = s.created_by_id');

interface SubscriptionRow {
  id: string;
  url: string;
  event_types: string[] | null;
  categories: string[] | null;
  description: string | null;
  active: boolean;
  created_by_id: string;
  disabled_at: string | null;
  created_at: string;
  updated_at: string;
  paused: boolean;
}

function toDto(r: SubscriptionRow) {
  return {
    id: r.id,
    url: r.url,
    eventTypes: r.event_types,
    categories: r.categories as ('RESEARCH' | 'GOVERNANCE' | 'ADMINISTRATIVE')[] | null,
    description: r.description,
    active: r.active,
    paused: r.paused,
    createdById: r.created_by_id,
    disabledAt: db.isoDate(r.disabled_at),
    createdAt: db.isoDate(r.created_at)!,
    updatedAt: db.isoDate(r.updated_at)!,
  };
}

const deliveryColumns = sql`d.id, d.activity_id, d.event_type, d.status, d.attempts, d.last_attempt_at, d.last_response_status, d.last_error,
  d.next_attempt_at, d.created_at`;

interface DeliveryRow {
  id: string;
  activity_id: string;
  event_type: string;
  status: DeliveryStatus;
  attempts: number;
  last_attempt_at: string | null;
  last_response_status: number | null;
  last_error: string | null;
  next_attempt_at: string | null;
  created_at: string;
}

function toDeliveryDto(r: DeliveryRow) {
  return {
    id: r.id,
    eventId: r.activity_id,
    eventType: r.event_type,
    status: r.status,
    attempts: r.attempts,
    lastAttemptAt: db.isoDate(r.last_attempt_at),
    lastResponseStatus: r.last_response_status,
    lastError: r.last_error,
    nextAttemptAt: r.status === 'PENDING' ? db.isoDate(r.next_attempt_at) : null,
    createdAt: db.isoDate(r.created_at)!,
  };
}

export const webhookSort = { fields: { createdAt: 's.created_at', url: 's.url' }, default: ['createdAt,desc'], tiebreaker: 's.id' };
export const deliverySort = { fields: { createdAt: 'd.created_at' }, default: ['createdAt,desc'], tiebreaker: 'd.id' };

/** `whsec_` + base64 of 32 random bytes: the Standard Webhooks secret format (at least 24 bytes). */
function newSecret(): string {
  return 'whsec_' + crypto.randomBytes(32).toString('base64');
}

/** Which addresses a URL of this scheme may reach: plain http only to private and loopback addresses, with the flag. */
export function addressPolicy(protocol: string, allowPrivate: boolean): AddressPolicy | undefined {
  if (protocol === 'https:') return { public: true, private: allowPrivate };
  if (protocol === 'http:' && allowPrivate) return { public: false, private: true };
  return undefined;
}

/** Subscriptions: organization admins only (403 for others), a subscription of another organization is a 404. */
export class Subscriptions {
  readonly #settings: WebhookSettings;

  constructor(settings: WebhookSettings) {
    this.#settings = settings;
  }

  async list(ctx: OperationContext, page: PageRequest) {
    ctx.services.permissions.assertAdmin(ctx.actor);
    const { rows, total } = await fetchPage<SubscriptionRow>(ctx.em, { columns, from: sql`${from} where s.organization_id = ${ctx.actor.organizationId}` }, page);
    return { items: rows.map(toDto), total };
  }

  /** 404 for a subscription of another organization (or none), then 403 unless the caller is an admin. */
  async get(ctx: OperationContext, id: string) {
    const row = await db.queryOne<SubscriptionRow>(ctx.em, sql`select ${columns} ${from} where s.id = ${id} and s.organization_id = ${ctx.actor.organizationId}`);
    if (!row) throw new errors.NotFoundError('Webhook', id);
    ctx.services.permissions.assertAdmin(ctx.actor);
    return toDto(row);
  }

  /**
   * The checks of every route naming a subscription, in the spec's order: a subscription of
   * another organization is a 404 like one that does not exist (its existence is never revealed
   * by a 403); one of the caller's organization is a 403 for non-admins.
   */
  async #admitted(ctx: OperationContext, id: string): Promise<void> {
    const row = await db.queryOne(ctx.em, sql`select 1 from webhook_subscription where id = ${id} and organization_id = ${ctx.actor.organizationId}`);
    if (!row) throw new errors.NotFoundError('Webhook', id);
    ctx.services.permissions.assertAdmin(ctx.actor);
  }

  async create(ctx: OperationContext, body: CreateWebhook) {
    const { actor, services } = ctx;
    services.permissions.assertAdmin(actor);
    const eventTypes = checkedEventTypes(services, body.eventTypes);
    await this.#checkUrl(body.url);
    const secret = newSecret();
    const id = crypto.randomUUID();
    await db.writeTransaction(ctx.em, async (em) => {
      // Its own creation record marks where its deliveries start in the change log (pipeline.ts).
      const created = services.activity.record(em, actor, { eventType: 'webhook.created', data: { webhookId: id } });
      await db.query(em, sql`insert into webhook_subscription (id, organization_id, created_by_id, url, event_types, categories, description, active, secret, created_activity_id)
        values (${id}, ${actor.organizationId}, ${actor.organizationUserId}, ${body.url}, ${textArray(eventTypes)}::text[], ${textArray(unique(body.categories))}::text[],
                ${body.description ?? null}, ${body.active ?? true}, ${services.secrets.seal(secret)}, ${created})`);
    });
    return { ...(await db.readAfterCommit(() => this.get(ctx, id))), secret };
  }

  /** PUT merges: omitted fields keep their value, `null` clears a filter (every event type or category). */
  async update(ctx: OperationContext, id: string, body: UpdateWebhook) {
    const { actor, services } = ctx;
    await this.#admitted(ctx, id);
    const eventTypes = body.eventTypes === undefined ? undefined : checkedEventTypes(services, body.eventTypes);
    if (body.url !== undefined) await this.#checkUrl(body.url);
    await db.writeTransaction(ctx.em, async (em) => {
      const current = await this.#locked(em, ctx, id);
      const next = {
        url: body.url ?? current.url,
        event_types: eventTypes === undefined ? current.event_types : eventTypes,
        categories: body.categories === undefined ? current.categories : unique(body.categories),
        description: body.description === undefined ? current.description : body.description,
        active: body.active ?? current.active,
      };
      const names = { url: 'url', event_types: 'eventTypes', categories: 'categories', description: 'description', active: 'active' } as const;
      const fields = (Object.keys(names) as (keyof typeof names)[])
        .filter((k) => JSON.stringify(next[k]) !== JSON.stringify(current[k]))
        .map((k) => names[k]);
      if (!fields.length) return;
      const reactivated = next.active && !current.active;
      await db.query(em, sql`update webhook_subscription set url = ${next.url}, event_types = ${textArray(next.event_types)}::text[],
          categories = ${textArray(next.categories)}::text[], description = ${next.description}, active = ${next.active}, updated_at = now()
          ${reactivated ? raw(', failing_since = null, disabled_at = null') : raw('')}
        where id = ${id}`);
      if (!next.active && current.active) await failPending(em, id, 'the subscription was set inactive');
      services.activity.record(em, actor, { eventType: 'webhook.updated', data: { webhookId: id, fields } });
    });
    return db.readAfterCommit(() => this.get(ctx, id));
  }

  async remove(ctx: OperationContext, id: string): Promise<void> {
    const { actor, services } = ctx;
    await this.#admitted(ctx, id);
    await db.writeTransaction(ctx.em, async (em) => {
      await this.#locked(em, ctx, id);
      // Its deliveries go with it (on delete cascade), and so do their totals.
      await db.query(em, sql`delete from webhook_subscription where id = ${id}`);
      await db.query(em, sql`delete from record_count where record_id = ${id} and kind = 'webhook_delivery'`);
      services.activity.record(em, actor, { eventType: 'webhook.deleted', data: { webhookId: id } });
    });
  }

  /** A new secret; the old one keeps signing for 24 hours, beside it (only the last two are kept). */
  async rotate(ctx: OperationContext, id: string): Promise<{ secret: string }> {
    const { actor, services } = ctx;
    await this.#admitted(ctx, id);
    const secret = newSecret();
    await db.writeTransaction(ctx.em, async (em) => {
      await this.#locked(em, ctx, id);
      await db.query(em, sql`update webhook_subscription set previous_secret = secret, previous_secret_expires_at = now() + ${raw(ROTATION_OVERLAP)},
          secret = ${services.secrets.seal(secret)}, updated_at = now() where id = ${id}`);
      services.activity.record(em, actor, { eventType: 'webhook.secret_rotated', data: { webhookId: id } });
    });
    return { secret };
  }

  /**
   * Records a `webhook.test` event and queues it for this subscription alone (active or not: an
   * admin may check a receiver before turning it on again); answers the delivery, PENDING.
   */
  async test(ctx: OperationContext, id: string) {
    const { actor, services } = ctx;
    await this.#admitted(ctx, id);
    const deliveryId = crypto.randomUUID();
    await db.writeTransaction(ctx.em, async (em) => {
      await this.#locked(em, ctx, id);
      const eventId = services.activity.record(em, actor, { eventType: TEST_EVENT, data: { webhookId: id } });
      await db.query(em, sql`insert into webhook_delivery (id, organization_id, subscription_id, activity_id, event_type, next_attempt_at)
        values (${deliveryId}, ${actor.organizationId}, ${id}, ${eventId}, ${TEST_EVENT}, now())`);
    });
    return db.readAfterCommit(() => this.delivery(ctx, id, deliveryId));
  }

  async deliveries(ctx: OperationContext, id: string, status: DeliveryStatus | undefined, page: PageRequest) {
    await this.#admitted(ctx, id);
    const where = sql`where d.subscription_id = ${id}${status ? sql` and d.status = ${status}` : raw('')}`;
    const total = counters.recordTotal(sql`${id}`, 'webhook_delivery', status ? [status] : undefined);
    const { rows, total: n } = await fetchPage<DeliveryRow>(ctx.em, { columns: deliveryColumns, from: sql`from webhook_delivery d ${where}`, total }, page);
    return { items: rows.map(toDeliveryDto), total: n };
  }

  async delivery(ctx: OperationContext, id: string, deliveryId: string) {
    await this.#admitted(ctx, id);
    const row = await db.queryOne<DeliveryRow>(ctx.em, sql`select ${deliveryColumns} from webhook_delivery d where d.id = ${deliveryId} and d.subscription_id = ${id}`);
    if (!row) throw new errors.NotFoundError('WebhookDelivery', deliveryId);
    return toDeliveryDto(row);
  }

  /**
   * Sends the delivery again now, whatever its status (a FAILED one gets one more attempt). One
   * being sent at this moment (claimed, its lease running) is left to that attempt.
   */
  async retry(ctx: OperationContext, id: string, deliveryId: string) {
    await this.#admitted(ctx, id);
    await db.writeTransaction(ctx.em, async (em) => {
      await this.#locked(em, ctx, id);
      const [row] = await db.query(em, sql`select 1 from webhook_delivery where id = ${deliveryId} and subscription_id = ${id} for update`);
      if (!row) throw new errors.NotFoundError('WebhookDelivery', deliveryId);
      await db.query(em, sql`update webhook_delivery set status = 'PENDING', next_attempt_at = now()
        where id = ${deliveryId} and not (claim_id is not null and next_attempt_at > now())`);
    });
    return db.readAfterCommit(() => this.delivery(ctx, id, deliveryId));
  }

  /** The subscription's row, locked for this write (a 404 unless it is the caller's organization's). */
  async #locked(em: OperationContext['em'], ctx: OperationContext, id: string): Promise<SubscriptionRow> {
    const row = await db.queryOne<SubscriptionRow>(em, sql`select s.* from webhook_subscription s where s.id = ${id} and s.organization_id = ${ctx.actor.organizationId} for update`);
    await db.recordLocked(em);
    if (!row) throw new errors.NotFoundError('Webhook', id);
    return row;
  }

  /**
   * 400 on `url` unless it may receive deliveries (README, "Outbound rules"): scheme, no
   * credentials, and every address its host resolves to now (checked again on each connection).
   */
  async #checkUrl(value: string): Promise<void> {
    const problem = await urlProblem(value, this.#settings.allowPrivate);
    if (problem) throw new errors.ValidationError([{ field: 'url', message: problem }]);
  }
}

export async function urlProblem(value: string, allowPrivate: boolean): Promise<string | undefined> {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be an absolute https URL';
  }
  const policy = addressPolicy(url.protocol, allowPrivate);
  if (!policy) return url.protocol === 'http:' ? 'must be an https URL (plain http only with LABDATA_WEBHOOK_ALLOW_PRIVATE=true, to private addresses)' : 'must be an https URL';
  if (url.username || url.password) return 'must not contain a user name or password';
  const host = urlHost(url);
  if (!host) return 'must name a host';
  const problem = await hostProblem(host, policy);
  return problem ? `host ${problem}` : undefined;
}

/** Every entry an event type some enabled plugin declares, or `prefix.*` matching one (else a 400 on `eventTypes`). */
export function checkedEventTypes(services: KernelServices, list: string[] | null | undefined): string[] | null {
  if (list === undefined || list === null) return null;
  const known = services.activity.eventTypes().map((e) => e.eventType);
  for (const entry of list) {
    const prefix = entry.endsWith('.*') ? entry.slice(0, -1) : undefined;
    const ok = prefix ? prefix.length > 1 && known.some((k) => k.startsWith(prefix)) : known.includes(entry);
    if (!ok) {
      throw new errors.ValidationError([{ field: 'eventTypes', message: `unknown event type "${entry}": name one an enabled plugin records (study.created) or a prefix of some (study.*)` }]);
    }
  }
  return unique(list)!;
}

const unique = <T>(list: T[] | null | undefined): T[] | null => (list ? [...new Set(list)] : null);

/** A text[] parameter: PostgreSQL's array literal (the SQL template expands JS arrays into lists). */
function textArray(list: string[] | null): string | null {
  return list ? `{${list.map((v) => `"${v.replace(/["\\]/g, '\\$&')}"`).join(',')}}` : null;
}

/** Pending deliveries of a subscription set inactive will not be sent: FAILED, with the reason (a retry sends one again). */
export async function failPending(em: OperationContext['em'], subscriptionId: string, reason: string): Promise<void> {
  await db.query(em, sql`update webhook_delivery set status = 'FAILED', next_attempt_at = null, last_error = ${reason}
    where subscription_id = ${subscriptionId} and status = 'PENDING' and claim_id is null`);
}

/**
 * SQL condition over `activity a`: not of a PRIVATE project the actor is not a member of
 * (directly or through an active team), admin or not. The issue's rule for webhooks ("PRIVATE
 * projects they are not a member of: never"), stricter than GET /activity, where an admin sees
 * every project: events leave the service here, so a PRIVATE project's go only to its members.
 * A project no longer there (its deletion) follows GET /activity.
 */
export function privateToMembers(services: KernelServices, actor: Actor): Sql {
  return sql`(a.project_id is null or not exists (select 1 from project p where p.id = a.project_id and p.visibility = 'PRIVATE'
    and not ${services.permissions.isMember(actor, raw('p.id'))}))`;
}

/** The creator as an actor: whose visibility a subscription's deliveries follow. */
export function creatorActor(row: { organization_id: string; created_by_id: string; creator_roles: string[] | null }): Actor {
  const roles = row.creator_roles ?? [];
  return { keyId: '', userId: '', organizationId: row.organization_id, organizationUserId: row.created_by_id, roles, isAdmin: roles.includes(ADMIN_ROLE) };
}

