import { ACTIVITY_CATEGORIES, schemas, type Static, Type } from '../../core/public.ts';
import { ActivitySchema } from '../activity/extensions.ts';

export const DELIVERY_STATUSES = ['PENDING', 'DELIVERED', 'FAILED'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

const url = Type.String({
  maxLength: 2048,
  description:
    'Where deliveries are POSTed: an `https:` URL whose host resolves to public addresses only, without a user name or password ' +
    '(with LABDATA_WEBHOOK_ALLOW_PRIVATE=true, `http:` and `https:` to private and loopback addresses too)',
});
const eventTypes = schemas.Nullable(
  Type.Array(Type.String({ maxLength: 200 }), {
    minItems: 1,
    maxItems: 100,
    description: 'Event types to receive: exact (`study.created`) or a prefix ending in `.*` (`study.*`); null or left out: every event type',
  }),
);
const categories = schemas.Nullable(
  Type.Array(schemas.StringEnum(ACTIVITY_CATEGORIES), { minItems: 1, description: 'Categories to receive; null or left out: every category' }),
);
const description = schemas.Nullable(Type.String({ maxLength: 500 }));

export const CreateWebhookBody = Type.Object({
  url,
  eventTypes: Type.Optional(eventTypes),
  categories: Type.Optional(categories),
  description: Type.Optional(description),
  active: Type.Optional(Type.Boolean({ description: 'Default true' })),
});

export const UpdateWebhookBody = Type.Object({
  url: Type.Optional(url),
  eventTypes: Type.Optional(eventTypes),
  categories: Type.Optional(categories),
  description: Type.Optional(description),
  active: Type.Optional(Type.Boolean({ description: 'true again after a disable starts deliveries anew' })),
});

export type CreateWebhook = Static<typeof CreateWebhookBody>;
export type UpdateWebhook = Static<typeof UpdateWebhookBody>;

const subscriptionFields = {
  id: schemas.Uuid(),
  url: Type.String(),
  eventTypes: schemas.Nullable(Type.Array(Type.String())),
  categories: schemas.Nullable(Type.Array(schemas.StringEnum(ACTIVITY_CATEGORIES))),
  description: schemas.Nullable(Type.String()),
  active: Type.Boolean({ description: 'false: set inactive (by an admin, or after 5 days of failed deliveries); nothing is delivered' }),
  paused: Type.Boolean({ description: 'true while its creator is not an active organization admin: deliveries wait (README, "Who sees what")' }),
  createdById: schemas.Uuid({ description: 'The organization admin who created it: it receives exactly what they may see' }),
  disabledAt: schemas.Nullable(schemas.Timestamp({ description: 'When 5 days of failed deliveries set it inactive' })),
  createdAt: schemas.Timestamp(),
  updatedAt: schemas.Timestamp(),
};

export const WebhookSchema = Type.Object(subscriptionFields, { title: 'Webhook' });

const secret = Type.String({ description: '`whsec_` + base64 of 32 random bytes: shown only here and on rotation. Verify deliveries with it (Standard Webhooks)' });

export const CreatedWebhookSchema = Type.Object({ ...subscriptionFields, secret }, { title: 'CreatedWebhook' });

export const RotatedSecretSchema = Type.Object({ secret }, { title: 'WebhookSecret' });

export const DeliverySchema = Type.Object(
  {
    id: schemas.Uuid({ description: 'Also the `webhook-id` header of every attempt' }),
    eventId: schemas.Uuid({ description: 'The activity record delivered' }),
    eventType: Type.String(),
    status: schemas.StringEnum(DELIVERY_STATUSES),
    attempts: Type.Integer(),
    lastAttemptAt: schemas.Nullable(schemas.Timestamp()),
    lastResponseStatus: schemas.Nullable(Type.Integer({ description: 'HTTP status of the last attempt; null when there was no answer' })),
    lastError: schemas.Nullable(Type.String({ description: 'Why the last attempt failed (`HTTP 503`, `timed out`, a refused address, ...)' })),
    nextAttemptAt: schemas.Nullable(schemas.Timestamp({ description: 'PENDING: when it is (re)sent' })),
    createdAt: schemas.Timestamp(),
  },
  { title: 'WebhookDelivery' },
);

export const DeliveryQuery = Type.Object({
  status: Type.Optional(schemas.StringEnum(DELIVERY_STATUSES, { description: 'Only deliveries in this status' })),
});

export const DeliveryParams = Type.Object({ id: schemas.Uuid(), deliveryId: schemas.Uuid() });

/** What a receiver gets: the body of every delivery (Standard Webhooks payload). */
export const WebhookEventSchema = Type.Object(
  {
    type: Type.String({ description: 'The event type (`study.created`, ...)' }),
    timestamp: schemas.Timestamp({ description: 'When the event happened (the record\'s `date`)' }),
    data: ActivitySchema,
  },
  { title: 'WebhookEvent', description: 'The body of a delivery: the activity record exactly as GET /api/v1/activity/{id} shows it' },
);

export const ChangesQuery = Type.Object({
  after: Type.Optional(Type.String({ pattern: '^[0-9]{1,18}$', description: 'A `nextCursor` of an earlier answer; left out: from the oldest record' })),
  size: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100, description: 'At most this many records (default 100)' })),
  wait: Type.Optional(Type.Number({ minimum: 0, maximum: 30, default: 0, description: 'Seconds to hold the request until a record arrives (0–30)' })),
});

export const ChangesSchema = Type.Object(
  {
    items: Type.Array(ActivitySchema, { description: 'Activity records, oldest first (in the order their changes committed)' }),
    nextCursor: Type.String({ description: 'Pass as `after` to continue; opaque' }),
    hasMore: Type.Boolean({ description: 'More records are there already: ask again at once' }),
  },
  { title: 'ActivityChanges' },
);
