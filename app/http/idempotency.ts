/**
 * `Idempotency-Key` on every REST create (a `POST` answering 201), for every plugin, in the kernel.
 *
 * - Scope: the API key's user in the key's organization. A key is remembered for 24 hours.
 * - Same key, same request (operation, path and query parameters, body — hashed): the first
 *   response is answered again (status, body, `Location`), with `Idempotent-Replayed: true`;
 *   nothing runs a second time.
 * - Same key, another request: 409 with the envelope.
 * - Concurrent duplicates: the first request inserts the key row (primary key: organization,
 *   user, key) before it runs, in its own statement; the others find the row and wait until the
 *   first response is stored (then replay it) or the row is released (then one of them runs).
 * - The create's own write transaction marks the row `applied` (its first statement, through
 *   `startEachWriteWith`), so the mark commits if and only if the record does. A failed request
 *   whose write did not commit (any 4xx or 5xx) created nothing: its row is released and the retry
 *   runs normally. One whose write committed keeps the key: a retry gets a 409 that says so.
 * - Storing the response or releasing the row is retried in the background for about a minute
 *   when the database drops at that moment (SETTLE_RETRIES).
 * - A row left in progress by a process that died is taken over after STALE_SECONDS, unless it
 *   was applied (the create committed, its response was lost): then the retry is a 409, never a
 *   second record. Every claim has its own id: a claim taken over can no longer mark or settle
 *   the row, and its write fails instead of committing beside the retry's.
 * - A key is 1 to 255 visible ASCII characters (no spaces): anything else is a 400.
 * - Stored responses are sealed like any stored credential (`services.secrets`): a create may
 *   answer a secret that is shown only then (a webhook's signing secret), and a replay shows it
 *   again to the same caller, but the table never holds it in clear.
 */
import crypto from 'node:crypto';
import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify';
import type { MigrationDefinition, Orm } from '../../core/db/orm.ts';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { WriteDefinition } from '../../core/kernel/operations.ts';
import { startEachWriteWith } from '../../core/db/transaction.ts';
import { ConflictError } from '../../core/errors.ts';
import { sqlStateOf } from '../../core/db/errors.ts';
import type { SecretBox } from '../../core/secrets.ts';
import { isBeta } from './beta-alias.ts';
import { sendError } from './envelope.ts';

/**
 * The table of `Idempotency-Key`. Named `kernel-` as they always were: they run right after the
 * kernel's own (assembleDeployment, app/assemble.ts), so every database has them in one order.
 */
export const idempotencyMigrations: MigrationDefinition[] = [
  {
    name: 'kernel-0006-idempotency-keys',
    sql: [
      // status_code null: the first request is still running.
      `create table idempotency_key (
        organization_id uuid not null,
        user_id uuid not null,
        key text not null,
        request_hash text not null,
        status_code integer,
        content_type text,
        location text,
        response_body text,
        created_at timestamptz not null default now(),
        primary key (organization_id, user_id, key))`,
      `create index idempotency_key_created_idx on idempotency_key (created_at)`,
    ],
  },
  {
    name: 'kernel-0008-idempotency-applied',
    sql: [
      // claim_id: whose claim the row is; applied: the create's write committed (status_code 0:
      // applied, and the request failed after it, so there is no response to replay).
      `alter table idempotency_key add column claim_id uuid, add column applied boolean not null default false`,
    ],
  },
  {
    name: 'kernel-0009-idempotency-applied-at',
    // When the create's transaction marked the claim: a response missing long after that was lost.
    sql: ['alter table idempotency_key add column applied_at timestamptz'],
  },
];

export const IDEMPOTENCY_HEADER = 'idempotency-key';
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;
const TTL = `interval '24 hours'`;
/**
 * A request still "running" after this long without its write committed may be taken over by a
 * retry: safe at any age (the claim id check), so short enough that a retry after a crash runs
 * within one wait.
 */
const STALE_SECONDS = 20;
/** How long a duplicate waits for the first request before giving up with a 409. */
const WAIT_MS = 30_000;
const POLL_MS = 50;
/** Expired keys are swept at most this often per process (on a claim; indexed by created_at). */
const SWEEP_MS = 10 * 60_000;
const SWEEP_BATCH = 1000;
/**
 * A settle that fails (the database dropped mid-request) is tried again in the background,
 * after 0.5, 1, 2, ... 32 s (about a minute), so a retry of the request finds the stored
 * response (or the released key) once the database is back.
 */
const SETTLE_RETRIES = 7;
/**
 * A claim applied this long ago and still without its response lost it (its process died between
 * the commit and the store). Counted from the mark, the start of the create's transaction: well
 * past the transaction, the response read after it and every settle retry above.
 */
const LOST_SECONDS = 180;
/**
 * The claim's own statements never wait behind a create's transaction, which holds the row it
 * marked until it commits: they give up at once and poll, instead of holding a pool connection.
 */
const CLAIM_LOCK_TIMEOUT = `'50ms'`;

/** Whether a write is a create: `POST` answering 201 (possibly besides 200). */
export function isCreate(def: WriteDefinition): boolean {
  return def.method === 'POST' && (def.status === 201 || def.alternativeStatus === 201);
}

interface Claim {
  organizationId: string;
  userId: string;
  key: string;
  claimId: string;
  /** Set once a write transaction of the request marked the claim (the create writes as it should). */
  marked?: boolean;
}

/** Status stored for a create that committed and then failed: nothing to replay. */
const APPLIED_WITHOUT_RESPONSE = 0;
const LOST = 'The request with this Idempotency-Key was carried out, but its response was lost: read the record rather than create it again';

interface StoredRow {
  request_hash: string;
  status_code: number | null;
  content_type: string | null;
  location: string | null;
  response_body: string | null;
  applied: boolean;
  expired: boolean;
  stale: boolean;
  lost: boolean;
}

/** Requests that own their key row: their response is stored (or the row released) on send. */
const owners = new WeakMap<FastifyRequest, Claim>();

/**
 * JSON with object keys sorted, so the same JSON in another key order is the same request.
 * Iterative: it runs before the body's depth is checked, so a deeply nested body must not
 * exhaust the stack here.
 */
export function stableJson(value: unknown): string {
  const out: string[] = [];
  const work: ({ text: string } | { value: unknown })[] = [{ value }];
  while (work.length) {
    const item = work.pop()!;
    if ('text' in item) {
      out.push(item.text);
      continue;
    }
    const v = item.value;
    if (Array.isArray(v)) {
      const parts: typeof work = [{ text: '[' }];
      v.forEach((x, i) => parts.push(...(i ? [{ text: ',' }] : []), { value: x }));
      parts.push({ text: ']' });
      work.push(...parts.reverse());
    } else if (v !== null && typeof v === 'object') {
      const parts: typeof work = [{ text: '{' }];
      Object.keys(v).sort().forEach((k, i) => {
        if (i) parts.push({ text: ',' });
        parts.push({ text: JSON.stringify(k) + ':' }, { value: (v as Record<string, unknown>)[k] });
      });
      parts.push({ text: '}' });
      work.push(...parts.reverse());
    } else {
      out.push(JSON.stringify(v) ?? 'null');
    }
  }
  return out.join('');
}

function requestHash(def: WriteDefinition, request: FastifyRequest): string {
  const input = [def.operationId, request.params ?? {}, request.query ?? {}, request.body ?? null];
  return crypto.createHash('sha256').update(stableJson(input)).digest('hex');
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Route hooks for the creates of one mount: `preValidation` claims or replays, `onSend` stores. */
export function idempotency(orm: Orm, secrets: SecretBox) {
  const run = <T>(sql: string, params: unknown[]) => orm.em.fork().execute(sql, params) as Promise<T[]>;
  let lastSweep = 0;

  async function settle(log: FastifyBaseLogger, statement: string, params: unknown[], attempt = 0): Promise<void> {
    try {
      await run(statement, params);
    } catch (err) {
      // The response itself stands; until the key is settled, a duplicate waits (then 409s).
      if (attempt >= SETTLE_RETRIES) {
        log.error({ err }, 'could not settle the idempotency key');
        return;
      }
      if (attempt === 0) log.warn({ err }, 'could not settle the idempotency key yet; retrying');
      setTimeout(() => void settle(log, statement, params, attempt + 1), 500 * 2 ** attempt).unref();
    }
  }

  function replay(request: FastifyRequest, reply: FastifyReply, row: StoredRow) {
    reply.code(row.status_code!).header('idempotent-replayed', 'true');
    if (row.content_type) reply.header('content-type', row.content_type);
    // The same request may come back on the other mount: Location names the one it used this time.
    if (row.location) reply.header('location', row.location.replace(/^\/api\/(v1|beta)\//, isBeta(request) ? '/api/beta/' : '/api/v1/'));
    return reply.send(row.response_body === null ? '' : opened(row.response_body));
  }

  /** A stored body: sealed (`v1.…`), or plain JSON stored before bodies were sealed. */
  function opened(stored: string): string {
    return stored.startsWith('v1.') ? secrets.open<string>(stored) : stored;
  }

  /** The body to store: sealed; nothing (an empty replay) should the key be unusable, never the clear text. */
  function sealed(body: string, log: FastifyBaseLogger): string | null {
    try {
      return secrets.seal(body);
    } catch (err) {
      log.error({ err }, 'could not seal the response for Idempotency-Key replays');
      return null;
    }
  }

  /** `statement` in a short transaction that will not wait for a row lock: undefined when it would have. */
  async function withoutWaiting<T>(statement: string, params: unknown[]): Promise<T[] | undefined> {
    try {
      return await orm.em.fork().transactional(async (tx) => {
        await tx.execute(`set local lock_timeout = ${CLAIM_LOCK_TIMEOUT}`);
        return (await tx.execute(statement, params)) as T[];
      });
    } catch (err) {
      if (sqlStateOf(err) === '55P03') return undefined;
      throw err;
    }
  }

  /** Deletes expired keys off the request path, a bounded batch at a time, skipping rows in use. */
  function sweep(log: FastifyBaseLogger) {
    if (Date.now() - lastSweep < SWEEP_MS) return;
    lastSweep = Date.now();
    const batch = async () => {
      for (;;) {
        const deleted = await run(
          `delete from idempotency_key where ctid = any (array(
             select ctid from idempotency_key where created_at < now() - ${TTL} limit ${SWEEP_BATCH} for update skip locked)) returning 1`,
          [],
        );
        if (deleted.length < SWEEP_BATCH) return;
      }
    };
    void batch().catch((err: unknown) => log.warn({ err }, 'could not sweep expired idempotency keys'));
  }

  return {
    /** Runs first, before body validation: the hash is of the body the client sent. */
    preValidation(def: WriteDefinition) {
      return async function idempotencyPreValidation(request: FastifyRequest, reply: FastifyReply) {
        const header = request.headers[IDEMPOTENCY_HEADER];
        if (header === undefined) return;
        const actor = request.actor!;
        if (typeof header !== 'string' || !KEY_PATTERN.test(header)) {
          return sendError(request, reply, 400, 'Validation failed', [
            { field: 'Idempotency-Key', message: 'must be 1 to 255 visible ASCII characters without spaces' },
          ]);
        }
        const claim: Claim = { organizationId: actor.organizationId, userId: actor.userId, key: header, claimId: crypto.randomUUID() };
        const pk = [claim.organizationId, claim.userId, claim.key];
        const hash = requestHash(def, request);
        const deadline = Date.now() + WAIT_MS;
        for (;;) {
          const inserted = await withoutWaiting<{ key: string }>(
            `insert into idempotency_key (organization_id, user_id, key, request_hash, claim_id) values (?, ?, ?, ?, ?)
             on conflict do nothing returning key`,
            [...pk, hash, claim.claimId],
          );
          if (inserted?.length) {
            owners.set(request, claim);
            sweep(request.log);
            return;
          }
          const [row] = await run<StoredRow>(
            `select request_hash, status_code, content_type, location, response_body, applied,
                    created_at < now() - ${TTL} as expired,
                    status_code is null and created_at < now() - make_interval(secs => ${STALE_SECONDS}) as stale,
                    status_code is null and applied and coalesce(applied_at, created_at) < now() - make_interval(secs => ${LOST_SECONDS}) as lost
               from idempotency_key where organization_id = ? and user_id = ? and key = ?`,
            pk,
          );
          if (!row) {
            if (inserted) continue; // released meanwhile: try to claim it
          } else if (row.expired || (row.stale && !row.applied)) {
            // Compare-and-delete: only the expired or abandoned row, not a fresh claim by someone
            // else, nor one whose write is committing now (it holds the row until its commit).
            const taken = await withoutWaiting(
              `delete from idempotency_key where organization_id = ? and user_id = ? and key = ?
                 and (created_at < now() - ${TTL} or (status_code is null and not applied and created_at < now() - make_interval(secs => ${STALE_SECONDS})))`,
              pk,
            );
            if (taken) continue;
          } else if (row.request_hash !== hash) {
            return sendError(request, reply, 409, 'This Idempotency-Key was already used with a different request');
          } else if (row.status_code === APPLIED_WITHOUT_RESPONSE || row.lost) {
            // Committed, and the response never came: its process died between the two.
            return sendError(request, reply, 409, LOST);
          } else if (row.status_code !== null) {
            return replay(request, reply, row);
          }
          if (Date.now() > deadline) {
            return sendError(request, reply, 409, 'A request with this Idempotency-Key is still being processed; retry later');
          }
          await sleep(POLL_MS);
        }
      };
    },

    /**
     * The request's write transactions (on `em`, its EntityManager) mark its claim applied as
     * their first statement; a claim taken over meanwhile fails the write instead.
     */
    join(request: FastifyRequest, em: EntityManager) {
      const claim = owners.get(request);
      if (!claim) return;
      startEachWriteWith(em, async (tx) => {
        const marked = await tx.execute(
          'update idempotency_key set applied = true, applied_at = now() where organization_id = ? and user_id = ? and key = ? and claim_id = ? returning 1',
          [claim.organizationId, claim.userId, claim.key, claim.claimId],
        );
        if (!marked.length) throw new ConflictError('A retry with this Idempotency-Key took the request over: its answer is the one that counts');
        claim.marked = true;
      });
    },

    /** Stores a success for later replays; on a failure, releases the key unless the write committed. */
    async onSend(request: FastifyRequest, reply: FastifyReply, payload: unknown) {
      const claim = owners.get(request);
      if (!claim) return payload;
      owners.delete(request);
      const mine = [claim.organizationId, claim.userId, claim.key, claim.claimId];
      const body = typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString('utf8') : undefined;
      if (reply.statusCode >= 200 && reply.statusCode < 300 && body !== undefined) {
        if (reply.statusCode === 201 && !claim.marked) {
          // Without the mark a crash after its commit, or a retry 20 s later, creates the record again.
          request.log.warn({ route: request.routeOptions.url }, 'a create wrote outside db.writeTransaction on its context EntityManager: its Idempotency-Key cannot tell whether it committed');
        }
        const location = reply.getHeader('location');
        await settle(
          request.log,
          `update idempotency_key set status_code = ?, content_type = ?, location = ?, response_body = ?
            where organization_id = ? and user_id = ? and key = ? and claim_id = ?`,
          [reply.statusCode, String(reply.getHeader('content-type') ?? ''), location === undefined ? null : String(location), sealed(body, request.log), ...mine],
        );
      } else {
        await settle(
          request.log,
          `with kept as (
             update idempotency_key set status_code = ${APPLIED_WITHOUT_RESPONSE}
              where organization_id = ? and user_id = ? and key = ? and claim_id = ? and applied and status_code is null returning 1)
           delete from idempotency_key where organization_id = ? and user_id = ? and key = ? and claim_id = ? and not applied and status_code is null`,
          [...mine, ...mine],
        );
      }
      return payload;
    },
  };
}
