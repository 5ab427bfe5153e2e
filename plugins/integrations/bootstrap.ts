import crypto from 'node:crypto';
import { type BootstrapContext, type BootstrapSection, errors, schemas, type TSchema } from '../../core/public.ts';
import { splitSecretFields, storageRootProblem, vendorUrlProblem } from '../../lib/integrations/index.ts';
import { IntegrationInput, PersonalIntegrationInput, PUBLIC_SETTINGS, type IntegrationType } from './schemas.ts';

interface Checked {
  type: IntegrationType;
  name: string;
  settings: Record<string, unknown>;
  /** Sealed: the given credentials plus every setting the type does not declare public. */
  credentials: string | null;
}

/**
 * Shape problems and the rules of the type's public settings (vendor URLs, server directories);
 * then the split: declared public settings are stored as given, every other field is a secret.
 * Messages name the field, never its value.
 */
function check(ctx: BootstrapContext, schema: TSchema, body: Record<string, unknown>, where: string): Checked {
  const problems = schemas.validateInput(schema, body);
  if (problems.length) throw new errors.BootstrapError(`${where}: ${problems.map((e) => `${e.field} ${e.message}`).join('; ')}`);
  const input = body as { type: IntegrationType; name: string; settings?: Record<string, unknown>; credentials?: Record<string, unknown> };
  const declared = PUBLIC_SETTINGS[input.type];
  const policy = { allowLinkLocal: ctx.services.config.vendorAllowLinkLocal };
  const { shown, secret } = splitSecretFields(input.settings ?? {}, Object.keys(declared));
  for (const [field, value] of Object.entries(shown)) {
    const kind = declared[field];
    const problem = kind === 'url' ? vendorUrlProblem(value, policy) : kind === 'root' ? storageRootProblem(value) : undefined;
    if (problem) throw new errors.BootstrapError(`${where}: settings.${field} ${problem}`);
  }
  const twice = Object.keys(secret).find((field) => input.credentials && field in input.credentials);
  if (twice) throw new errors.BootstrapError(`${where}: settings.${twice} is also in credentials: give it once, in credentials`);
  const credentials = input.credentials || Object.keys(secret).length ? { ...input.credentials, ...secret } : undefined;
  return { type: input.type, name: input.name.trim(), settings: shown, credentials: credentials === undefined ? null : ctx.services.secrets.seal(credentials) };
}

/**
 * `integrations`: `{ref, organization, type, name, settings?, credentials?}` per item, an
 * organization's connection to an ELN or Git service.
 */
export const integrationsSection: BootstrapSection = async (ctx, items) => {
  const out: Record<string, { id: string }> = {};
  for (const [i, item] of items.entries()) {
    const where = ctx.label('integrations', item, i);
    const organizationId = await ctx.organization(item.organization, where);
    const { ref: _ref, organization: _organization, ...body } = item;
    const input = check(ctx, IntegrationInput, body, where);
    const id = crypto.randomUUID();
    await ctx.em.execute('insert into integration (id, organization_id, type, name, settings, credentials) values (?, ?, ?, ?, ?::jsonb, ?)', [
      id, organizationId, input.type, input.name, JSON.stringify(input.settings), input.credentials,
    ]);
    if (typeof item.ref === 'string') out[item.ref] = { id };
  }
  return out;
};

/**
 * `personalIntegrations`: `{ref, user, organization, type, name, settings?, credentials}` per
 * item, a user's own connection (ACTIVE); the user must be a member of the organization.
 */
export const personalIntegrationsSection: BootstrapSection = async (ctx, items) => {
  const out: Record<string, { id: string }> = {};
  for (const [i, item] of items.entries()) {
    const where = ctx.label('personalIntegrations', item, i);
    const organizationId = await ctx.organization(item.organization, where);
    const userId = await ctx.user(item.user, where);
    await ctx.organizationUser(item.user, organizationId, where);
    const { ref: _ref, organization: _organization, user: _user, ...body } = item;
    const input = check(ctx, PersonalIntegrationInput, body, where);
    const id = crypto.randomUUID();
    await ctx.em.execute(
      `insert into personal_integration (id, organization_id, user_id, type, name, settings, credentials, status)
       values (?, ?, ?, ?, ?, ?::jsonb, ?, 'ACTIVE')`,
      [id, organizationId, userId, input.type, input.name, JSON.stringify(input.settings), input.credentials],
    );
    if (typeof item.ref === 'string') out[item.ref] = { id };
  }
  return out;
};
