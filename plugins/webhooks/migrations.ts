import type { db } from '../../core/public.ts';

export const migrations: db.MigrationDefinition[] = [
  {
    name: 'webhooks-0001-init',
    sql: [
      // Secrets are sealed (services.secrets, AES-256-GCM), not hashed: signing needs them. The
      // previous secret still signs until previous_secret_expires_at (24 h after a rotation).
      // failing_since: the first failed attempt since the last delivered one (5 days: disabled).
      // created_activity_id: its webhook.created record; from_position: that record's position in
      // the change log, once sequenced. It receives the changes after that one, in commit order.
      `create table webhook_subscription (
        id uuid primary key,
        organization_id uuid not null references organization (id) deferrable initially deferred,
        created_by_id uuid not null references organization_user (id) deferrable initially deferred,
        url text not null,
        event_types text[],
        categories text[],
        description text,
        active boolean not null,
        secret text not null,
        previous_secret text,
        previous_secret_expires_at timestamptz,
        failing_since timestamptz,
        disabled_at timestamptz,
        created_activity_id uuid not null,
        from_position bigint,
        created_at timestamptz not null default now(),
        updated_at timestamptz not null default now())`,
      `create index webhook_subscription_org_idx on webhook_subscription (organization_id, created_at, id)`,

      // The outbox. A statement-level trigger copies every activity record into
      // webhook_change_pending in the writing transaction (one insert per statement, whatever
      // the number of subscriptions), so the record and its change commit or roll back together.
      // `history`: written by a transaction that ran `set local labdata.history = 'on'` (an
      // import moving old records in): in the change feed, never delivered to webhooks.
      `create table webhook_change_pending (
        seq bigint generated always as identity primary key,
        activity_id uuid not null,
        organization_id uuid not null,
        event_type text not null,
        category text not null,
        history boolean not null)`,
      `create function webhook_capture_activity() returns trigger language plpgsql as $$
       begin
         insert into webhook_change_pending (activity_id, organization_id, event_type, category, history)
         select n.id, n.organization_id, n.event_type, n.category, coalesce(current_setting('labdata.history', true), '') = 'on'
           from new_activity n;
         return null;
       end $$`,
      `create trigger webhook_capture_activity after insert on activity referencing new table as new_activity
         for each statement execute function webhook_capture_activity()`,

      // The change log: every activity record in commit order. One sequencer at a time (the
      // webhook_sequencer row, locked) numbers the pending changes that have committed, after
      // the last position it gave: a change committing later gets a higher position, so a
      // reader past position P never finds a new row at or below P (README, "Change feed").
      `create table webhook_change (
        position bigint primary key,
        activity_id uuid not null,
        organization_id uuid not null)`,
      `create index webhook_change_org_idx on webhook_change (organization_id, position)`,
      `create table webhook_sequencer (id integer primary key check (id = 1), position bigint not null)`,
      // The records written before the plugin came are the start of the feed, oldest first.
      // (The trigger exists first: its lock on activity lets no insert commit unseen in between.)
      `insert into webhook_change (position, activity_id, organization_id)
         select row_number() over (order by date, id), id, organization_id from activity`,
      `insert into webhook_sequencer (id, position) select 1, coalesce(max(position), 0) from webhook_change`,

      // One row per event and subscription; its id is the `webhook-id` of every attempt.
      // claim_id: the claim of the instance sending it now (next_attempt_at is then its lease).
      `create table webhook_delivery (
        id uuid primary key,
        organization_id uuid not null,
        subscription_id uuid not null references webhook_subscription (id) on delete cascade,
        activity_id uuid not null,
        event_type text not null,
        status text not null default 'PENDING',
        attempts integer not null default 0,
        next_attempt_at timestamptz,
        last_attempt_at timestamptz,
        last_response_status integer,
        last_error text,
        claim_id uuid,
        created_at timestamptz not null default now())`,
      // What is due, in order; the log of a subscription, newest first; and its deliveries not
      // yet delivered (the status filter, held and backed-off deliveries).
      `create index webhook_delivery_due_idx on webhook_delivery (next_attempt_at) where status = 'PENDING'`,
      `create index webhook_delivery_log_idx on webhook_delivery (subscription_id, created_at desc, id desc)`,
      `create index webhook_delivery_open_idx on webhook_delivery (subscription_id, created_at desc, id desc) where status <> 'DELIVERED'`,
      // The delivery log's exact totals (per subscription and status, in the kernel's
      // record_count): statement-level, one upsert per subscription and status a statement touches.
      `create function webhook_count_deliveries() returns trigger language plpgsql as $$
       begin
         if tg_op = 'INSERT' then
           perform labdata_count_record(subscription_id, 'webhook_delivery', status, count(*)) from new_deliveries group by subscription_id, status;
         elsif tg_op = 'DELETE' then
           perform labdata_count_record(subscription_id, 'webhook_delivery', status, -count(*)) from old_deliveries group by subscription_id, status;
         else
           perform labdata_count_record(subscription_id, 'webhook_delivery', status, sum(d)::bigint)
              from (select subscription_id, status, -1 as d from old_deliveries
                    union all select subscription_id, status, 1 from new_deliveries) c
             group by subscription_id, status having sum(d) <> 0;
         end if;
         return null;
       end $$`,
      `create trigger webhook_count_insert after insert on webhook_delivery referencing new table as new_deliveries
         for each statement execute function webhook_count_deliveries()`,
      `create trigger webhook_count_update after update on webhook_delivery referencing old table as old_deliveries new table as new_deliveries
         for each statement execute function webhook_count_deliveries()`,
      `create trigger webhook_count_delete after delete on webhook_delivery referencing old table as old_deliveries
         for each statement execute function webhook_count_deliveries()`,
    ],
  },
];
