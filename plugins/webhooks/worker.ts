import crypto from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { db, type EntityManager, type JobContext, type KernelServices, raw, sql } from '../../core/public.ts';
import { activityColumns, activityShownTo, type ActivityDto, type ActivityRow, toActivityDtos } from '../activity/extensions.ts';
import { sequence } from './pipeline.ts';
import { Sender, type Outcome } from './sender.ts';
import type { WebhookSettings } from './settings.ts';
import { creatorActor, creatorMayReceive, failPending, privateToMembers } from './subscriptions.ts';
import type { ChangeWatcher } from './watcher.ts';

/** How often an idle instance looks for new changes and due deliveries. */
const POLL_MS = 200;
/** Deliveries in flight per instance, and per subscription (a slow receiver leaves room for the others). */
const MAX_IN_FLIGHT = 32;
const MAX_PER_SUBSCRIPTION = 16;
/** Due deliveries looked at per claim: a claim costs O(this), whatever the backlog. */
const CLAIM_SCAN = 500;
/**
 * A claimed delivery is this instance's for this long, renewed every RENEW_MS while it is in
 * flight: should the instance die, another sends it within LEASE_SECONDS (a new attempt).
 * Attempts themselves end within 10 s (sender.ts).
 */
const LEASE_SECONDS = 6;
const RENEW_MS = 1_500;
/** A subscription whose deliveries have all failed this long is set inactive (README, "Outcome"). */
const DISABLE_AFTER = `interval '5 days'`;
/** Delivered and failed deliveries are kept this long in the log. */
const RETENTION = `interval '30 days'`;
const PRUNE_EVERY_MS = 3600_000;

type Task = Omit<JobContext, 'jobId' | 'attempt'>;

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

interface Claimed {
  id: string;
  subscription_id: string;
  activity_id: string;
  event_type: string;
  attempts: number;
  organization_id: string;
  url: string;
  secret: string;
  previous_secret: string | null;
  previous_valid: boolean;
  created_by_id: string;
  creator_user_id: string | null;
  creator_roles: string[] | null;
  creator_ok: boolean;
}

interface Result {
  id: string;
  claim: string;
  at: string;
  status: 'DELIVERED' | 'PENDING' | 'FAILED';
  code: number | null;
  error: string | null;
  delay: number | null;
}

/**
 * The delivery loop (a background task of every serving instance): sequence and fan out new
 * changes (pipeline.ts), claim due deliveries, send them, record the outcomes. Every step is a
 * short statement or transaction on the shared database; instances coordinate only there.
 *
 * Once per attempt: a claim is one UPDATE of due rows chosen `for update skip locked`, which
 * gives each row to one instance and makes it not due (its lease); the outcome is recorded only
 * by the claim that sent it (`claim_id`). At least once: a change is fanned out in the
 * transaction that sequences it, a delivery stays PENDING until an outcome is recorded, and a
 * claim whose instance died runs out (LEASE_SECONDS) and is sent again.
 */
export class DeliveryWorker {
  readonly #services: KernelServices;
  readonly #settings: WebhookSettings;
  readonly #watcher: ChangeWatcher;
  readonly #sender: Sender;
  /** Per claim, its deliveries not yet recorded (their leases are renewed); per subscription, how many are in flight. */
  readonly #claims = new Map<string, number>();
  readonly #perSubscription = new Map<string, number>();
  #inFlight = 0;
  #results: Result[] = [];
  #wake: ((why: 'work' | 'done') => void) | undefined;
  #lastRenew = 0;
  #lastPrune = 0;
  readonly #signers = new Map<string, Webhook>();

  constructor(services: KernelServices, settings: WebhookSettings, watcher: ChangeWatcher) {
    this.#services = services;
    this.#settings = settings;
    this.#watcher = watcher;
    this.#sender = new Sender(settings.allowPrivate);
  }

  /**
   * Two loops: one sequences and fans out (pipeline.ts), the other claims, sends and records, so
   * a large fan-out never holds up sending. Either failing stops both; the task runner starts
   * the task again.
   */
  async run(task: Task): Promise<void> {
    const stop = new AbortController();
    const abort = () => stop.abort();
    task.signal.addEventListener('abort', abort, { once: true });
    const loops = [this.#sequencing(task, stop.signal), this.#delivering(task, stop.signal)].map((loop) =>
      loop.catch((err: unknown) => {
        stop.abort();
        throw err;
      }),
    );
    const settled = await Promise.allSettled(loops);
    task.signal.removeEventListener('abort', abort);
    const failed = settled.find((r) => r.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;
  }

  async #sequencing(task: Task, signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      const step = await sequence(task.em.fork());
      if (step?.positions.size) {
        this.#watcher.advanced(step.positions);
        this.#wake?.('work');
      }
      // A full batch: more is waiting, at once.
      if (!step?.more) await pause(POLL_MS, signal);
    }
  }

  /**
   * Claims in batches: with a backlog, a claim fills the free slots and the next waits until a
   * quarter of them are free again; an outcome alone only gets recorded (outcomes that come
   * together are recorded in one statement), new work and the poll interval bring a claim.
   */
  async #delivering(task: Task, signal: AbortSignal): Promise<void> {
    const { em } = task;
    let claimNow = true;
    let lastClaim = 0;
    try {
      while (!signal.aborted) {
        const free = MAX_IN_FLIGHT - this.#inFlight;
        let full = false;
        if (claimNow && free > 0) {
          lastClaim = Date.now();
          full = (await this.#claim(em.fork(), free, task)) === free;
        }
        await this.#flush(em.fork(), task);
        if (this.#claims.size && Date.now() - this.#lastRenew > RENEW_MS) await this.#renew(em.fork());
        if (Date.now() - this.#lastPrune > PRUNE_EVERY_MS) await this.#prune(em.fork());
        if (full) {
          while (this.#inFlight > MAX_IN_FLIGHT - MAX_IN_FLIGHT / 4 && !signal.aborted) await this.#idle(1_000, signal);
          claimNow = true;
          continue;
        }
        const why = await this.#idle(POLL_MS, signal);
        claimNow = why !== 'done' || Date.now() - lastClaim >= POLL_MS;
      }
    } finally {
      // Attempts under way end within 10 s; their outcomes are recorded before the pool goes.
      while (this.#inFlight > 0) await this.#idle(1_000);
      await this.#flush(em.fork(), task).catch((err: unknown) => task.log.warn({ err }, 'webhooks: outcomes not recorded; their deliveries will be sent again'));
      if (task.signal.aborted) this.#sender.close();
    }
  }

  /** Resolves after `ms`, or when woken: by the sequencer (`work`) or an attempt's end (`done`). */
  #idle(ms: number, signal?: AbortSignal): Promise<'timer' | 'work' | 'done' | 'abort'> {
    return new Promise((resolve) => {
      const done = (why: 'timer' | 'work' | 'done' | 'abort') => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', aborted);
        this.#wake = undefined;
        resolve(why);
      };
      const aborted = () => done('abort');
      const timer = setTimeout(() => done('timer'), ms);
      signal?.addEventListener('abort', aborted, { once: true });
      this.#wake = done;
    });
  }

  /** Claims up to `free` due deliveries and starts sending them; returns how many it claimed. */
  async #claim(em: EntityManager, free: number, task: Task): Promise<number> {
    const claim = crypto.randomUUID();
    const busy = [...this.#perSubscription].filter(([, n]) => n >= MAX_PER_SUBSCRIPTION).map(([id]) => id);
    const rows = await db.query<Claimed>(
      em,
      sql`with claimed as (
            update webhook_delivery d set claim_id = ${claim}, next_attempt_at = now() + make_interval(secs => ${LEASE_SECONDS})
             where d.id = any (array(
               select id from webhook_delivery
                where id = any (array(select id from webhook_delivery where status = 'PENDING' and next_attempt_at <= now()
                                       order by next_attempt_at limit ${raw(String(CLAIM_SCAN))}))
                  and status = 'PENDING' and next_attempt_at <= now()${busy.length ? sql` and subscription_id not in (${busy})` : raw('')}
                order by next_attempt_at limit ${free} for update skip locked))
            returning d.id, d.subscription_id, d.activity_id, d.event_type, d.attempts)
          select c.*, s.organization_id, s.url, s.secret, s.previous_secret, coalesce(s.previous_secret_expires_at > now(), false) as previous_valid,
                 s.created_by_id, ou.user_id as creator_user_id, ou.roles as creator_roles, ${creatorMayReceive} as creator_ok
            from claimed c join webhook_subscription s on s.id = c.subscription_id
            left join organization_user ou on ou.id = s.created_by_id`,
    );
    if (!rows.length) return 0;
    // A creator who may not receive (deactivated, no longer admin) pauses the subscription: its
    // due deliveries wait, looked at again after the first retry delay, attempts not counted.
    const paused = [...new Set(rows.filter((r) => !r.creator_ok).map((r) => r.subscription_id))];
    if (paused.length) {
      await db.query(em, sql`update webhook_delivery set next_attempt_at = now() + make_interval(secs => ${this.#settings.retryDelays[0]})
        where subscription_id in (${paused}) and status = 'PENDING' and (claim_id = ${claim} or next_attempt_at <= now())`);
    }
    const sendable = rows.filter((r) => r.creator_ok);
    const records = await this.#records(em, sendable, task);
    // Not shown to the creator now (or no longer there): not theirs to receive. Dropped.
    const gone = sendable.filter((r) => !records.has(r.id)).map((r) => r.id);
    if (gone.length) await db.query(em, sql`delete from webhook_delivery where id in (${gone}) and claim_id = ${claim}`);
    for (const row of sendable) {
      const record = records.get(row.id);
      if (record) this.#start(row, claim, record, task);
    }
    return rows.length;
  }

  /**
   * The records as GET /api/v1/activity shows each creator, by delivery id, one query per
   * creator; of a PRIVATE project, only if the creator is its member (README, "Who sees what").
   */
  async #records(em: EntityManager, rows: Claimed[], task: Task): Promise<Map<string, ActivityDto>> {
    const byCreator = new Map<string, Claimed[]>();
    for (const r of rows) byCreator.set(r.created_by_id, [...(byCreator.get(r.created_by_id) ?? []), r]);
    const out = new Map<string, ActivityDto>();
    for (const group of byCreator.values()) {
      const first = group[0];
      const actor = { ...creatorActor(first), userId: first.creator_user_id ?? '' };
      const ctx = { actor, em, services: this.#services, log: task.log };
      const ids = [...new Set(group.map((r) => r.activity_id))];
      const found = await db.query<ActivityRow>(em, sql`select ${activityColumns} from activity a
        where a.id in (${ids}) and ${activityShownTo(ctx)} and ${privateToMembers(this.#services, actor)}`);
      const byId = new Map((await toActivityDtos(ctx, found)).map((a) => [a.id, a]));
      for (const r of group) {
        const record = byId.get(r.activity_id);
        if (record) out.set(r.id, record);
      }
    }
    return out;
  }

  #start(row: Claimed, claim: string, record: ActivityDto, task: Task): void {
    this.#inFlight++;
    this.#claims.set(claim, (this.#claims.get(claim) ?? 0) + 1);
    this.#perSubscription.set(row.subscription_id, (this.#perSubscription.get(row.subscription_id) ?? 0) + 1);
    const body = JSON.stringify({ type: row.event_type, timestamp: record.date, data: record });
    const now = new Date();
    let headers: Record<string, string>;
    try {
      headers = {
        'webhook-id': row.id,
        'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
        'webhook-signature': this.#signatures(row, now, body),
      };
    } catch (err) {
      task.log.error({ err, subscriptionId: row.subscription_id }, 'webhooks: cannot sign with the stored secret');
      this.#done(row, claim, { delivered: false, status: null, error: 'the secret could not be opened' });
      return;
    }
    this.#sender.send(row.url, headers, body).then(
      (outcome) => this.#done(row, claim, outcome),
      (err: unknown) => this.#done(row, claim, { delivered: false, status: null, error: `not sent (${(err as Error).message})` }),
    );
  }

  /** `v1,<sig>` with the current secret, and with the previous one during the 24 h after a rotation. */
  #signatures(row: Claimed, at: Date, body: string): string {
    const sealed = [row.secret, ...(row.previous_valid && row.previous_secret ? [row.previous_secret] : [])];
    return sealed.map((s) => this.#signer(s).sign(row.id, at, body)).join(' ');
  }

  #signer(sealed: string): Webhook {
    let signer = this.#signers.get(sealed);
    if (!signer) {
      if (this.#signers.size > 1000) this.#signers.clear();
      signer = new Webhook(this.#services.secrets.open<string>(sealed));
      this.#signers.set(sealed, signer);
    }
    return signer;
  }

  #done(row: Claimed, claim: string, outcome: Outcome): void {
    const attempt = row.attempts + 1;
    const delays = this.#settings.retryDelays;
    const status = outcome.delivered ? 'DELIVERED' : attempt > delays.length ? 'FAILED' : 'PENDING';
    this.#results.push({
      id: row.id,
      claim,
      at: new Date().toISOString(),
      status,
      code: outcome.status,
      error: outcome.error,
      delay: status === 'PENDING' ? delays[attempt - 1] : null,
    });
    this.#inFlight--;
    const perSub = this.#perSubscription.get(row.subscription_id)! - 1;
    if (perSub) this.#perSubscription.set(row.subscription_id, perSub);
    else this.#perSubscription.delete(row.subscription_id);
    this.#wake?.('done');
  }

  /**
   * Records the outcomes gathered since the last flush, in one statement: DELIVERED; PENDING with
   * the next retry; FAILED when the delays are used up (or the subscription was set inactive
   * meanwhile). Then per subscription: a delivery clears its failing streak; a failure starts one,
   * holds back its other due deliveries until the first retry delay (a receiver that is down is
   * not sent the whole backlog at once), and after 5 days of failures sets it inactive.
   */
  async #flush(em: EntityManager, task: Task): Promise<void> {
    if (!this.#results.length) return;
    const results = this.#results;
    this.#results = [];
    let rows: { subscription_id: string; delivered: boolean; failed: boolean }[];
    try {
      rows = await db.query(
        em,
        sql`with r as (select * from jsonb_to_recordset(${JSON.stringify(results)}::jsonb)
                         as r(id uuid, claim uuid, at timestamptz, status text, code integer, error text, delay float8)),
            recorded as (
              update webhook_delivery d
                 set status = case when r.status = 'PENDING' and not s.active then 'FAILED' else r.status end,
                     attempts = d.attempts + 1, last_attempt_at = r.at, last_response_status = r.code, last_error = r.error, claim_id = null,
                     next_attempt_at = case when r.status = 'PENDING' and s.active then now() + make_interval(secs => r.delay) end
                from r, webhook_subscription s
               where d.id = r.id and d.claim_id = r.claim and s.id = d.subscription_id
              returning d.subscription_id, r.status = 'DELIVERED' as delivered)
            select subscription_id, bool_or(delivered) as delivered, bool_or(not delivered) as failed from recorded group by subscription_id`,
      );
    } catch (err) {
      // Kept for the next flush (their leases are renewed meanwhile).
      this.#results.push(...results);
      throw err;
    }
    for (const { claim } of results) {
      const left = this.#claims.get(claim)! - 1;
      if (left) this.#claims.set(claim, left);
      else this.#claims.delete(claim);
    }
    const delivered = rows.filter((r) => r.delivered).map((r) => r.subscription_id);
    const failing = rows.filter((r) => r.failed && !r.delivered).map((r) => r.subscription_id);
    if (delivered.length) {
      await db.query(em, sql`update webhook_subscription set failing_since = null where id in (${delivered}) and failing_since is not null`);
    }
    if (failing.length) await this.#failing(em, failing, task);
  }

  async #failing(em: EntityManager, ids: string[], task: Task): Promise<void> {
    await db.query(em, sql`update webhook_delivery set next_attempt_at = now() + make_interval(secs => ${this.#settings.retryDelays[0]})
      where subscription_id in (${ids}) and status = 'PENDING' and next_attempt_at <= now()`);
    const disabled = await db.writeTransaction(em, async (tx) => {
      await db.query(tx, sql`update webhook_subscription set failing_since = now() where id in (${ids}) and failing_since is null`);
      const rows = await db.query<{ id: string; organization_id: string; created_by_id: string; failing_since: string }>(
        tx,
        sql`update webhook_subscription set active = false, disabled_at = now(), updated_at = now()
             where id in (${ids}) and active and failing_since <= now() - ${raw(DISABLE_AFTER)}
            returning id, organization_id, created_by_id, failing_since`,
      );
      for (const row of rows) {
        await failPending(tx, row.id, 'the subscription was disabled after 5 days of failed deliveries');
        // Nobody acted: the record names the subscription's creator, the one it delivered for.
        const actor = creatorActor({ organization_id: row.organization_id, created_by_id: row.created_by_id, creator_roles: null });
        this.#services.activity.record(tx, actor, { eventType: 'webhook.disabled', data: { webhookId: row.id, failingSince: db.isoDate(row.failing_since) } });
      }
      return rows;
    });
    for (const row of disabled) task.log.warn({ subscriptionId: row.id }, 'webhooks: a subscription failed for 5 days and was set inactive');
  }

  async #renew(em: EntityManager): Promise<void> {
    this.#lastRenew = Date.now();
    const claims = [...this.#claims.keys()];
    await db.query(em, sql`update webhook_delivery set next_attempt_at = now() + make_interval(secs => ${LEASE_SECONDS})
      where claim_id in (${claims}) and status = 'PENDING'`);
  }

  /** The log keeps 30 days: older delivered and failed deliveries go, a bounded batch per subscription. */
  async #prune(em: EntityManager): Promise<void> {
    this.#lastPrune = Date.now();
    await db.query(em, sql`delete from webhook_delivery where id = any (array(
        select d.id from webhook_subscription s cross join lateral (
          select id from webhook_delivery d where d.subscription_id = s.id and d.created_at < now() - ${raw(RETENTION)} and d.status <> 'PENDING'
           order by d.created_at limit 1000) d))`);
  }
}
