import { definePlugin, defineRead, defineWrite, schemas } from '../../core/public.ts';
import { events } from './events.ts';
import { changes } from './feed.ts';
import { migrations } from './migrations.ts';
import {
  ChangesQuery,
  ChangesSchema,
  CreatedWebhookSchema,
  CreateWebhookBody,
  DeliveryParams,
  DeliveryQuery,
  DeliverySchema,
  RotatedSecretSchema,
  UpdateWebhookBody,
  WebhookEventSchema,
  WebhookSchema,
} from './schemas.ts';
import { readSettings } from './settings.ts';
import { deliverySort, Subscriptions, webhookSort } from './subscriptions.ts';
import { ChangeWatcher } from './watcher.ts';
import { DeliveryWorker } from './worker.ts';

const tags = ['Webhooks'];
const admins = ' Organization admins only.';

/**
 * What a receiver is sent (OpenAPI `callbacks` of the subscription create): a POST of the event,
 * signed as Standard Webhooks 1.0 says.
 */
const delivery = {
  event: {
    '{$request.body#/url}': {
      post: {
        summary: 'A delivery: one event, signed',
        description:
          'Sent for every event the subscription matches, at least once (retried on any answer but a 2xx within 10 s). ' +
          'Verify it with the `standardwebhooks` package and the subscription secret; `webhook-id` is the same for every attempt of one event, so a receiver can drop repeats.',
        parameters: [
          { in: 'header', name: 'webhook-id', required: true, schema: { type: 'string' }, description: 'The delivery id: the same for every attempt of one event to one subscription' },
          { in: 'header', name: 'webhook-timestamp', required: true, schema: { type: 'string' }, description: 'Unix seconds of this attempt' },
          {
            in: 'header', name: 'webhook-signature', required: true, schema: { type: 'string' },
            description: '`v1,` + base64 HMAC-SHA256 of `id.timestamp.body` keyed with the secret\'s base64 part; two, space-separated, for 24 h after a rotation',
          },
        ],
        requestBody: { required: true, content: { 'application/json': { schema: WebhookEventSchema } } },
        responses: {
          '2XX': { description: 'Delivered (within 10 s)' },
          '4XX': { description: 'Not delivered: retried after the next of LABDATA_WEBHOOK_RETRY_DELAYS, as any answer but a 2xx (a 3xx too: redirects are not followed) or none' },
          '5XX': { description: 'Not delivered: retried, as a 4xx' },
        },
      },
    },
  },
};

/**
 * Webhooks: signed deliveries of the activity records (the service's outbox: one is written in
 * the transaction of every change) to subscribed URLs, and a change feed in commit order. The
 * kernel knows nothing of them: a trigger on activity, a background task, and these operations.
 */
export default definePlugin({
  name: 'webhooks',
  version: '1.0.0',
  description: 'Webhooks: signed deliveries of activity to subscribed URLs; the activity change feed',
  tags: {
    Webhooks: 'Subscriptions that POST every matching activity record to a URL, signed (Standard Webhooks), retried until delivered; their delivery logs. Organization admins only.',
  },
  dependsOn: ['activity', 'projects'],
  migrations,
  events,
  setup(ctx) {
    const settings = readSettings(ctx.services.config.settings);
    const watcher = new ChangeWatcher();
    const worker = new DeliveryWorker(ctx.services, settings, watcher);
    ctx.services.jobs.background(ctx.plugin, { name: 'deliver', run: (task) => worker.run(task) });
    ctx.services.counters.register({
      plugin: ctx.plugin,
      statements: [`insert into record_count (record_id, kind, category, n) select subscription_id, 'webhook_delivery', status, count(*) from webhook_delivery group by 1, 3`],
    });
    return { subscriptions: new Subscriptions(settings), watcher };
  },
  register(ctx, { subscriptions, watcher }) {
    ctx.read(
      defineRead({
        name: 'list_activity_changes',
        summary: 'Change feed of activity',
        description:
          'The activity records the caller may see (as GET /activity shows them), oldest first, in the order their changes committed, after `after` (a `nextCursor`). ' +
          'No record is ever skipped, even when transactions commit in another order than they started. `wait` holds an empty answer until something arrives. For consumers that cannot receive webhooks.',
        path: '/activity/changes',
        tags: ['Activity'],
        query: ChangesQuery,
        response: ChangesSchema,
        tool: false,
        run: (c, input) => changes(c, watcher, input),
      }),
    );
    ctx.read(
      defineRead({
        name: 'list_webhooks',
        description: 'List the organization\'s webhook subscriptions (without their secrets).' + admins,
        path: '/webhooks',
        tags,
        response: WebhookSchema,
        paged: { sort: webhookSort },
        tool: false,
        run: (c, _input, page) => subscriptions.list(c, page),
      }),
    );
    ctx.read(
      defineRead({
        name: 'get_webhook',
        description: 'Get one webhook subscription (without its secret).' + admins,
        path: '/webhooks/:id',
        tags,
        params: schemas.IdParams,
        response: WebhookSchema,
        tool: false,
        run: (c, { id }) => subscriptions.get(c, id),
      }),
    );
    ctx.read(
      defineRead({
        name: 'list_webhook_deliveries',
        description: 'The delivery log of a subscription, newest first; optional `status` filter. Kept 30 days.' + admins,
        path: '/webhooks/:id/deliveries',
        tags,
        params: schemas.IdParams,
        query: DeliveryQuery,
        response: DeliverySchema,
        paged: { sort: deliverySort },
        tool: false,
        run: (c, { id, status }, page) => subscriptions.deliveries(c, id, status, page),
      }),
    );
    ctx.read(
      defineRead({
        name: 'get_webhook_delivery',
        description: 'One delivery of a subscription.' + admins,
        path: '/webhooks/:id/deliveries/:deliveryId',
        tags,
        params: DeliveryParams,
        response: DeliverySchema,
        tool: false,
        run: (c, { id, deliveryId }) => subscriptions.delivery(c, id, deliveryId),
      }),
    );
    ctx.write(
      defineWrite({
        method: 'POST',
        operationId: 'create_webhook',
        description:
          'Subscribe a URL to the organization\'s events. The answer holds the signing `secret`, shown this once. ' +
          'Deliveries start with the events that commit after this.' + admins,
        path: '/webhooks',
        tags,
        body: CreateWebhookBody,
        status: 201,
        errors: [403],
        response: CreatedWebhookSchema,
        callbacks: delivery,
        run: (c, { body }) => subscriptions.create(c, body),
      }),
    );
    ctx.write(
      defineWrite({
        method: 'PUT',
        operationId: 'update_webhook',
        description: 'Update a subscription (omitted fields keep their value; `null` filters receive everything).' + admins,
        path: '/webhooks/:id',
        tags,
        params: schemas.IdParams,
        body: UpdateWebhookBody,
        status: 200,
        errors: [403],
        response: WebhookSchema,
        run: (c, { params, body }) => subscriptions.update(c, params.id, body),
      }),
    );
    ctx.write(
      defineWrite({
        method: 'DELETE',
        operationId: 'delete_webhook',
        description: 'Delete a subscription and its delivery log; nothing more is sent.' + admins,
        path: '/webhooks/:id',
        tags,
        params: schemas.IdParams,
        status: 204,
        errors: [403],
        run: (c, { params }) => subscriptions.remove(c, params.id),
      }),
    );
    ctx.write(
      defineWrite({
        method: 'POST',
        operationId: 'rotate_webhook_secret',
        description: 'A new signing secret, shown this once; for 24 hours every delivery is signed with both the new and the old one.' + admins,
        path: '/webhooks/:id/rotate-secret',
        tags,
        params: schemas.IdParams,
        status: 200,
        errors: [403],
        response: RotatedSecretSchema,
        run: (c, { params }) => subscriptions.rotate(c, params.id),
      }),
    );
    ctx.write(
      defineWrite({
        method: 'POST',
        operationId: 'test_webhook',
        description: 'Send a `webhook.test` event to this subscription alone (active or not); answers its delivery.' + admins,
        path: '/webhooks/:id/test',
        tags,
        params: schemas.IdParams,
        status: 200,
        errors: [403],
        response: DeliverySchema,
        run: (c, { params }) => subscriptions.test(c, params.id),
      }),
    );
    ctx.write(
      defineWrite({
        method: 'POST',
        operationId: 'retry_webhook_delivery',
        description: 'Send a delivery again now, whatever its status (one attempt more for a FAILED one).' + admins,
        path: '/webhooks/:id/deliveries/:deliveryId/retry',
        tags,
        params: DeliveryParams,
        status: 200,
        errors: [403],
        response: DeliverySchema,
        run: (c, { params }) => subscriptions.retry(c, params.id, params.deliveryId),
      }),
    );
  },
});

