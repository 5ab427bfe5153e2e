import { schemas, type Static, Type } from '../../core/public.ts';

/** The external systems an integration connects (storage credentials live with storage drives). */
export const INTEGRATION_TYPES = ['ELN_A', 'ELN_B', 'GIT'] as const;
export type IntegrationType = (typeof INTEGRATION_TYPES)[number];

export const PERSONAL_INTEGRATION_STATUSES = ['ACTIVE', 'ARCHIVED'] as const;

const Settings = Type.Record(Type.String(), Type.Unknown(), {
  description: 'The public connection settings its type declares (base URL, provider ...); every other field is a secret and never shown',
});

export const IntegrationSchema = Type.Object({
  id: schemas.Uuid(),
  organizationId: schemas.Uuid(),
  type: schemas.StringEnum(INTEGRATION_TYPES),
  name: Type.String(),
  settings: Settings,
  hasCredentials: Type.Boolean({ description: 'Whether credentials are stored (they are never returned)' }),
  createdAt: schemas.Timestamp(),
  updatedAt: schemas.Timestamp(),
});

export const PersonalIntegrationSchema = Type.Object({
  id: schemas.Uuid(),
  organizationId: schemas.Uuid(),
  userId: schemas.Uuid({ description: 'The user who owns the connection (always the caller)' }),
  type: schemas.StringEnum(INTEGRATION_TYPES),
  name: Type.String(),
  settings: Settings,
  status: schemas.StringEnum(PERSONAL_INTEGRATION_STATUSES, { description: 'Only ACTIVE connections are listed' }),
  hasCredentials: Type.Boolean({ description: 'Whether credentials are stored (they are never returned)' }),
  createdAt: schemas.Timestamp(),
  updatedAt: schemas.Timestamp(),
}, { title: 'PersonalIntegration' });

/** How a public setting is checked when it is stored: a vendor URL, a directory on the server, or as is. */
export type SettingKind = 'url' | 'root' | 'plain';

/**
 * The public settings each integration type declares (README, "Bootstrap sections"): shown to
 * every member of the organization. Any other field given in `settings` is a secret, sealed with
 * the credentials and never shown.
 */
export const PUBLIC_SETTINGS: Record<IntegrationType, Record<string, SettingKind>> = {
  ELN_A: { baseUrl: 'url', checkTimeoutMs: 'plain', timeoutMs: 'plain' },
  ELN_B: { baseUrl: 'url', checkTimeoutMs: 'plain', timeoutMs: 'plain' },
  GIT: { provider: 'plain', baseUrl: 'url', rootPath: 'root', timeoutMs: 'plain' },
};

export const publicSettingNames = (type: string): string[] => Object.keys(PUBLIC_SETTINGS[type as IntegrationType] ?? {});

const Credentials = Type.Record(Type.String(), Type.Unknown(), { description: 'Secrets; stored encrypted, never returned' });

/** A bootstrap-file `integrations` item (without `ref` and `organization`). */
export const IntegrationInput = Type.Object({
  type: schemas.StringEnum(INTEGRATION_TYPES),
  name: schemas.NotBlank({ maxLength: 255 }),
  settings: Type.Optional(Settings),
  credentials: Type.Optional(Credentials),
});

/** A bootstrap-file `personalIntegrations` item (without `ref`, `user` and `organization`). */
export const PersonalIntegrationInput = Type.Object({
  type: schemas.StringEnum(INTEGRATION_TYPES),
  name: schemas.NotBlank({ maxLength: 255 }),
  settings: Type.Optional(Settings),
  credentials: Credentials,
});

export type IntegrationInputBody = Static<typeof IntegrationInput>;
export type PersonalIntegrationInputBody = Static<typeof PersonalIntegrationInput>;
