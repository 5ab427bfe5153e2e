import pg from 'pg';
import type { FastifyBaseLogger } from 'fastify';
import { abandonConnection } from '../db/query-deadline.ts';
import type { CachedKey, KeyCache } from '../../core/auth/api-keys.ts';
import type { MigrationDefinition } from '../../core/db/orm.ts';

/**
 * The triggers that tell every instance's cache what changed: a revoked or changed key, or a
 * membership whose roles or status changed. Named `kernel-` as it always was (app/assemble.ts).
 */
export const authNotifyMigrations: MigrationDefinition[] = [
  {
    name: 'kernel-0004-auth-notify',
    sql: [
      `create function labdata_notify_key() returns trigger language plpgsql as $$
       begin
         perform pg_notify('labdata_auth', 'k:' || coalesce(new.id, old.id));
         return null;
       end $$`,
      `create trigger api_key_notify after update of revoked_at, expires_at, secret_hash, user_id, organization_id, organization_user_id or delete
         on api_key for each row execute function labdata_notify_key()`,
      `create function labdata_notify_organization_user() returns trigger language plpgsql as $$
       begin
         perform pg_notify('labdata_auth', 'u:' || coalesce(new.id, old.id));
         return null;
       end $$`,
      `create trigger organization_user_notify after update of roles, status, organization_id, user_id or delete
         on organization_user for each row execute function labdata_notify_organization_user()`,
    ],
  },
  {
    // A user's name or email: the organization users cache shows them (app/http/organization-users.ts).
    name: 'kernel-0010-user-notify',
    sql: [
      `create function labdata_notify_user() returns trigger language plpgsql as $$
       begin
         perform pg_notify('labdata_auth', 'a:' || coalesce(new.id, old.id));
         return null;
       end $$`,
      `create trigger app_user_notify after update of email, display_name or delete
         on app_user for each row execute function labdata_notify_user()`,
    ],
  },
  {
    // A key's cached actor carries its user's active teams (core/auth `teamIds`): a membership
    // names the user; a team switched on or off (rare) names no one key, so the caches empty.
    name: 'kernel-0012-team-notify',
    sql: [
      `create function labdata_notify_team_member() returns trigger language plpgsql as $$
       begin
         if tg_op <> 'INSERT' then perform pg_notify('labdata_auth', 'u:' || old.organization_user_id); end if;
         if tg_op <> 'DELETE' then perform pg_notify('labdata_auth', 'u:' || new.organization_user_id); end if;
         return null;
       end $$`,
      `create trigger team_member_notify after insert or update or delete
         on team_member for each row execute function labdata_notify_team_member()`,
      `create function labdata_notify_team() returns trigger language plpgsql as $$
       begin
         perform pg_notify('labdata_auth', 't:' || new.id);
         return null;
       end $$`,
      // A deleted team's memberships go by cascade, each naming its user.
      `create trigger team_notify after update of active on team for each row
         when (old.active is distinct from new.active) execute function labdata_notify_team()`,
    ],
  },
];

/** The channel the database triggers notify on when a key or an organization user changes. */
export const AUTH_CHANNEL = 'labdata_auth';
/** Upper bound on how long an entry lives even if every notification were lost. */
const MAX_AGE_MS = 60_000;
const MAX_ENTRIES = 50_000;
const RECONNECT_MS = 1_000;
/**
 * A listener connection that does not answer for this long (a hung database) is given up: its
 * requests authenticate against the database (bounded there too) and it reconnects.
 */
const LISTENER_DEADLINE_MS = 2_000;

/**
 * An in-process cache of API keys, so authentication costs no database round trip.
 *
 * Correctness rests on PostgreSQL LISTEN/NOTIFY: triggers on `api_key`, `organization_user` and
 * the team tables notify `labdata_auth` with `k:<keyId>` or `u:<organizationUserId>` when a key
 * is revoked or changed, or a membership's roles, status or teams change; every instance sharing the database drops
 * the entries named. The cache serves only while its listener connection is up: when it drops,
 * the cache empties and every request goes to the database until the listener is back (and
 * empties again then, since notifications sent meanwhile are lost). A read that raced a
 * notification is not kept (generation check), so no stale entry outlives the notification.
 *
 * "Refused on the very next request" needs one more step: a notification travels
 * asynchronously, so a request could arrive before the notification of a change committed
 * just before it. `sync()` is a barrier: a trivial query on the listener connection, sent after
 * the request arrived; PostgreSQL delivers pending notifications on that connection before
 * answering it. Concurrent requests share one barrier (at most one in flight, the next one
 * collecting everyone who arrived meanwhile), so under load it costs a fraction of a query
 * per request, and never a read of the key tables.
 */
export class AuthCache implements KeyCache {
  #entries = new Map<string, CachedKey>();
  /**
   * Key ids by organization user, so a `u:` notification costs its user's keys, not a walk of
   * every entry: a team's member list replaced sends one per member, each handled at once.
   */
  #byUser = new Map<string, Set<string>>();
  #client: pg.Client | undefined;
  #listening = false;
  #closed = false;
  #generation = 0;
  #timer: NodeJS.Timeout | undefined;
  readonly #url: string;
  readonly #log: FastifyBaseLogger | undefined;

  readonly #channels: Record<string, (payload: string) => void>;

  /** `channels`: other notifications to hear on the same connection (the barrier covers them too). */
  constructor(url: string, log?: FastifyBaseLogger, channels: Record<string, (payload: string) => void> = {}) {
    this.#url = url;
    this.#log = log;
    this.#channels = channels;
  }

  /** True while notifications are received, i.e. while cached entries may be used. */
  get active(): boolean {
    return this.#listening;
  }

  /** Opens the listener; resolves once it listens or failed (the cache stays off then and retries). */
  async start(): Promise<void> {
    await this.#connect();
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#off();
    const client = this.#client;
    this.#client = undefined;
    await client?.end().catch(() => {});
  }

  #barrierInFlight = false;
  #waiting: ((ok: boolean) => void)[] = [];

  /**
   * Resolves true once every notification committed before this call has been applied (see the
   * class comment); false when the listener is not up (the caller must ask the database).
   */
  sync(): Promise<boolean> {
    if (!this.#listening) return Promise.resolve(false);
    return new Promise((resolve) => {
      this.#waiting.push(resolve);
      if (!this.#barrierInFlight) this.#sendBarrier();
    });
  }

  #sendBarrier(): void {
    const client = this.#client;
    const batch = this.#waiting;
    this.#waiting = [];
    if (!client || !this.#listening) {
      for (const resolve of batch) resolve(false);
      return;
    }
    this.#barrierInFlight = true;
    let settled = false;
    const settle = (ok: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      for (const resolve of batch) resolve(ok);
      this.#barrierInFlight = false;
      if (this.#waiting.length) this.#sendBarrier();
    };
    const timer = setTimeout(() => {
      settle(false);
      this.#giveUp(client);
    }, LISTENER_DEADLINE_MS);
    timer.unref();
    client.query('select 1').then(
      () => settle(this.#listening && this.#client === client),
      () => settle(false),
    );
  }

  /** Ends a listener connection that stopped answering; its `end` handler reconnects. */
  #giveUp(client: pg.Client): void {
    abandonConnection(client, `the auth listener got no answer within ${LISTENER_DEADLINE_MS / 1000} s`);
  }

  generation(): number {
    return this.#generation;
  }

  get(keyId: string): CachedKey | undefined {
    if (!this.#listening) return undefined;
    const entry = this.#entries.get(keyId);
    if (!entry) return undefined;
    const now = Date.now();
    if (entry.expiresAt <= now || now - entry.cachedAt > MAX_AGE_MS) {
      this.#drop(keyId);
      return undefined;
    }
    return entry;
  }

  /** Keeps an entry read from the database, unless a notification arrived since the read began. */
  put(entry: CachedKey, generationAtRead: number): void {
    if (!this.#listening || generationAtRead !== this.#generation) return;
    if (this.#entries.size >= MAX_ENTRIES) this.#clear();
    this.#drop(entry.id);
    this.#entries.set(entry.id, entry);
    const keys = this.#byUser.get(entry.organizationUserId);
    if (keys) keys.add(entry.id);
    else this.#byUser.set(entry.organizationUserId, new Set([entry.id]));
  }

  #drop(keyId: string): void {
    const entry = this.#entries.get(keyId);
    if (!entry) return;
    this.#entries.delete(keyId);
    const keys = this.#byUser.get(entry.organizationUserId);
    keys?.delete(keyId);
    if (keys?.size === 0) this.#byUser.delete(entry.organizationUserId);
  }

  #clear(): void {
    this.#entries.clear();
    this.#byUser.clear();
  }

  #invalidate(payload: string): void {
    this.#generation++;
    const [kind, id] = [payload.slice(0, 2), payload.slice(2)];
    if (kind === 'k:') {
      this.#drop(id);
    } else if (kind === 'u:') {
      for (const keyId of [...(this.#byUser.get(id) ?? [])]) this.#drop(keyId);
    } else if (kind !== 'a:') {
      // A user's name or email (`a:`) is in no key; the new generation empties the organization users cache.
      // A team switched on or off (`t:`) changes its members' keys: all are dropped.
      this.#clear();
    }
  }

  #off(): void {
    this.#listening = false;
    this.#generation++;
    this.#clear();
  }

  async #connect(): Promise<void> {
    if (this.#closed) return;
    const client = new pg.Client({ connectionString: this.#url, connectionTimeoutMillis: LISTENER_DEADLINE_MS });
    const lost = (err?: Error) => {
      if (this.#client !== client) return;
      this.#client = undefined;
      this.#off();
      client.end().catch(() => {});
      if (this.#closed) return;
      this.#log?.warn({ err: err?.message }, 'auth cache listener lost; authenticating against the database until it is back');
      this.#timer = setTimeout(() => void this.#connect(), RECONNECT_MS);
      this.#timer.unref();
    };
    client.on('error', lost);
    client.on('end', () => lost());
    client.on('notification', (msg) => {
      if (msg.channel === AUTH_CHANNEL) this.#invalidate(msg.payload ?? '*');
      else this.#channels[msg.channel]?.(msg.payload ?? '');
    });
    this.#client = client;
    // Connected but never listening (the database hangs after accepting): give up and retry.
    const stalled = setTimeout(() => this.#giveUp(client), LISTENER_DEADLINE_MS * 2).unref();
    try {
      await client.connect();
      await client.query(`listen ${AUTH_CHANNEL}`);
      for (const channel of Object.keys(this.#channels)) await client.query(`listen ${channel}`);
      clearTimeout(stalled);
      if (this.#client !== client || this.#closed) return;
      // Anything cached before this point may have missed notifications.
      this.#clear();
      this.#generation++;
      this.#listening = true;
    } catch (err) {
      clearTimeout(stalled);
      lost(err as Error);
    }
  }
}
