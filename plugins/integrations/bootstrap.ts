import crypto from 'node:crypto';
import { BootstrapError, validateInput, type BootstrapContext, type BootstrapSection, type TSchema } from '../../core/public.ts';
import { IntegrationInput, PersonalIntegrationInput, SECRET_KEY_PATTERN, type IntegrationInputBody, type PersonalIntegrationInputBody } from './schemas.ts';

/** Shape errors, and a secret-looking key in `settings` (secrets go to `credentials`, which is sealed). */
function check(schema: TSchema, body: Record<string, unknown>, where: string) {
  const errors = validateInput(schema, body);
  if (errors.length) throw new BootstrapError(`${where}: ${errors.map((e) => `${e.field} ${e.message}`).join('; ')}`);
  const secretLike = Object.keys((body.settings as Record<string, unknown> | undefined) ?? {}).filter((k) => SECRET_KEY_PATTERN.test(k));
  if (secretLike.length) {
    throw new BootstrapError(`${where}: settings.${secretLike[0]} looks like a secret: put it in credentials (stored encrypted, never shown)`);
  }
}

const sealed = (ctx: BootstrapContext, credentials: Record<string, unknown> | undefined) =>
  credentials === undefined ? null : ctx.services.secrets.seal(credentials);

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
    check(IntegrationInput, body, where);
    const input = body as IntegrationInputBody;
    const id = crypto.randomUUID();
    await ctx.em.execute('insert into integration (id, organization_id, type, name, settings, credentials) values (?, ?, ?, ?, ?::jsonb, ?)', [
      id, organizationId, input.type, input.name.trim(), JSON.stringify(input.settings ?? {}), sealed(ctx, input.credentials),
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
    check(PersonalIntegrationInput, body, where);
    const input = body as PersonalIntegrationInputBody;
    const id = crypto.randomUUID();
    await ctx.em.execute(
      `insert into personal_integration (id, organization_id, user_id, type, name, settings, credentials, status)
       values (?, ?, ?, ?, ?, ?::jsonb, ?, 'ACTIVE')`,
      [id, organizationId, userId, input.type, input.name.trim(), JSON.stringify(input.settings ?? {}), sealed(ctx, input.credentials)],
    );
    if (typeof item.ref === 'string') out[item.ref] = { id };
  }
  return out;
};
