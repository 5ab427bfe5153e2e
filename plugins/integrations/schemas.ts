import { StringEnum, Timestamp, Type, Uuid, NotBlank, type Static } from '../../core/public.ts';

/** The external systems an integration connects (storage credentials live with storage drives). */
export const INTEGRATION_TYPES = ['ELN_A', 'ELN_B', 'GIT'] as const;
export type IntegrationType = (typeof INTEGRATION_TYPES)[number];

export const PERSONAL_INTEGRATION_STATUSES = ['ACTIVE', 'ARCHIVED'] as const;

const Settings = Type.Record(Type.String(), Type.Unknown(), {
  description: 'Non-secret connection settings (base URL, provider ...); credentials are never shown',
});

export const IntegrationSchema = Type.Object({
  id: Uuid(),
  organizationId: Uuid(),
  type: StringEnum(INTEGRATION_TYPES),
  name: Type.String(),
  settings: Settings,
  hasCredentials: Type.Boolean({ description: 'Whether credentials are stored (they are never returned)' }),
  createdAt: Timestamp(),
  updatedAt: Timestamp(),
});

export const PersonalIntegrationSchema = Type.Object({
  id: Uuid(),
  organizationId: Uuid(),
  userId: Uuid({ description: 'The user who owns the connection (always the caller)' }),
  type: StringEnum(INTEGRATION_TYPES),
  name: Type.String(),
  settings: Settings,
  status: StringEnum(PERSONAL_INTEGRATION_STATUSES, { description: 'Only ACTIVE connections are listed' }),
  hasCredentials: Type.Boolean({ description: 'Whether credentials are stored (they are never returned)' }),
  createdAt: Timestamp(),
  updatedAt: Timestamp(),
}, { title: 'PersonalIntegration' });

/** Keys that look like a secret: they belong in `credentials`, never in the shown settings. */
export const SECRET_KEY_PATTERN = /(secret|token|password|passwd|api[-_]?key|private|credential)/i;

const Credentials = Type.Record(Type.String(), Type.Unknown(), { description: 'Secrets; stored encrypted, never returned' });

/** A bootstrap-file `integrations` item (without `ref` and `organization`). */
export const IntegrationInput = Type.Object({
  type: StringEnum(INTEGRATION_TYPES),
  name: NotBlank({ maxLength: 255 }),
  settings: Type.Optional(Settings),
  credentials: Type.Optional(Credentials),
});

/** A bootstrap-file `personalIntegrations` item (without `ref`, `user` and `organization`). */
export const PersonalIntegrationInput = Type.Object({
  type: StringEnum(INTEGRATION_TYPES),
  name: NotBlank({ maxLength: 255 }),
  settings: Type.Optional(Settings),
  credentials: Credentials,
});

export type IntegrationInputBody = Static<typeof IntegrationInput>;
export type PersonalIntegrationInputBody = Static<typeof PersonalIntegrationInput>;
