import { db, type EntityManager, raw, sql } from '../../core/public.ts';
import { TEST_EVENT } from './events.ts';

/**
 * Changes numbered per transaction: up to 2,000 (an import's history moves in a few hundred
 * short transactions), fewer when many subscriptions could each take one: a transaction inserts
 * about FANOUT deliveries at most.
 */
const BATCH = 2000;
const FANOUT = 20_000;

/** Above every position: a subscription whose creation is not sequenced yet gets nothing. */
const MAX_POSITION = '9223372036854775807';

/** Per organization, the last position a step gave. */
export type Positions = Map<string, number>;

/**
 * The sequencer: turns committed changes (webhook_change_pending, filled by the trigger on
 * activity) into the change log, numbered in commit order, and fans each new change out to the
 * matching subscriptions, all in one short transaction.
 *
 * Why a sequencer rather than a watermark: the change feed's cursor is a position, and a reader
 * past position P must never later find a change at or below P. Positions taken when a row is
 * written (a sequence, or the writer's xid8 `pg_current_xact_id()`) follow the order writers
 * *started*, not the order they committed: a transaction that started first and committed last
 * would appear below a cursor that has passed it. A watermark (`pg_snapshot_xmin`: show only
 * rows of transactions older than the oldest one still running) fixes that, but holds every
 * organization's feed and webhooks behind any long transaction in the cluster (a 3-minute
 * import, a recount). Here a change gets its position only once it has committed (the
 * sequencer's snapshot sees only committed rows), from one sequencer at a time (the
 * webhook_sequencer row, locked `skip locked`, so any instance may be it and none waits),
 * each after the last it gave; its transaction commits before the next sequencer can lock the
 * row. So positions become visible in increasing order: a committed position below another
 * visible one is already visible too. Session state plays no part (PgBouncer in transaction
 * mode is fine).
 *
 * Fan-out happens in the same transaction, at the moment a change gets its position, so each
 * change is fanned out exactly once: deliveries for the active subscriptions of its organization
 * whose filters match (event types exact or `prefix.*`, categories) and whose creation (their
 * `webhook.created` record) comes before the change in the log. Nothing happens per
 * subscription when the change is written. History moved in by an import (`history`) is in the
 * change log but never delivered; `webhook.test` goes only to the subscription it tests
 * (queued by that request).
 */
export async function sequence(em: EntityManager): Promise<{ positions: Positions; more: boolean } | undefined> {
  // The common idle case costs one probe of the primary key (which skips the dead rows of moved
  // changes once seen, where a scan of the table would read them until the next vacuum).
  const [probe] = await db.query<{ pending: boolean; subscriptions: string }>(
    em,
    sql`select exists (select seq from webhook_change_pending order by seq limit 1) as pending,
               (select count(*) from webhook_subscription where active) as subscriptions`,
  );
  if (!probe.pending) return undefined;
  const batch = Math.max(100, Math.min(BATCH, Math.floor(FANOUT / Math.max(1, Number(probe.subscriptions)))));
  return db.writeTransaction(em, async (tx) => {
    const [lock] = await db.query<{ position: string }>(tx, sql`select position from webhook_sequencer where id = 1 for update skip locked`);
    if (!lock) return undefined; // another instance is sequencing now
    const rows = await db.query<{ organization_id: string; last: string; n: string }>(
      tx,
      sql`with moved as (
            delete from webhook_change_pending
             where seq = any (array(select seq from webhook_change_pending order by seq limit ${batch}))
            returning seq, activity_id, organization_id, event_type, category, history),
          numbered as materialized (select m.*, ${lock.position}::bigint + row_number() over (order by m.seq) as position from moved m),
          logged as (insert into webhook_change (position, activity_id, organization_id)
                     select position, activity_id, organization_id from numbered),
          kinds as (select distinct organization_id, event_type, category from numbered where not history and event_type <> ${TEST_EVENT}),
          -- Filters are matched once per kind of change in the batch, not once per change.
          matched as (select k.*, s.id as subscription_id, coalesce(s.from_position,
                             (select c.position from numbered c where c.activity_id = s.created_activity_id), ${raw(MAX_POSITION)}) as from_position
                        from kinds k join webhook_subscription s on s.organization_id = k.organization_id and s.active
                       where (s.event_types is null or k.event_type = any (s.event_types)
                              or exists (select 1 from unnest(s.event_types) t where t like '%.*' and starts_with(k.event_type, left(t, -1))))
                         and (s.categories is null or k.category = any (s.categories))),
          fanned as (insert into webhook_delivery (id, organization_id, subscription_id, activity_id, event_type, next_attempt_at, created_at)
                     select gen_random_uuid(), n.organization_id, m.subscription_id, n.activity_id, n.event_type, now(), clock_timestamp()
                       from numbered n join matched m using (organization_id, event_type, category)
                      where not n.history and n.position > m.from_position
                      order by n.position),
          started as (update webhook_subscription s set from_position = n.position
                        from numbered n where n.activity_id = s.created_activity_id and s.from_position is null),
          advanced as (update webhook_sequencer set position = (select coalesce(max(position), ${lock.position}::bigint) from numbered) where id = 1)
          select organization_id, max(position) as last, count(*) as n from numbered group by organization_id`,
    );
    const moved = rows.reduce((sum, r) => sum + Number(r.n), 0);
    return { positions: new Map(rows.map((r) => [r.organization_id, Number(r.last)])), more: moved >= batch };
  });
}
