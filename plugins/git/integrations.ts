import { errors } from '../../core/public.ts';
import { findIntegration, findPersonalIntegration } from '../integrations/extensions.ts';
import type { GitSettings } from './provider.ts';
import type { FindGitIntegration } from './service.ts';

/**
 * A GIT integration the actor may use: one of the organization's, or else one of the actor's own
 * ACTIVE personal connections (a personal token is never used on another user's behalf, so a
 * project default naming someone else's connection does not resolve for them). 404 when neither
 * exists (unknown, another organization's, disconnected), 400 when it is of another type.
 */
export const findGitIntegration: FindGitIntegration = async (ctx, id, field) => {
  const opts = { secrets: ctx.services.secrets, field };
  try {
    return usable(await findIntegration(ctx.em, ctx.actor.organizationId, id, 'GIT', opts));
  } catch (err) {
    if (!(err instanceof errors.NotFoundError)) throw err;
  }
  try {
    return usable(await findPersonalIntegration(ctx.em, { organizationId: ctx.actor.organizationId, userId: ctx.actor.userId }, id, 'GIT', opts));
  } catch (err) {
    // Name it as the caller did: an integration.
    if (err instanceof errors.NotFoundError) throw new errors.NotFoundError('Integration', id);
    throw err;
  }
};

/** Settings are free-form JSON in the integrations plugin; connect() checks each one it reads. */
const usable = (i: { id: string; settings: Record<string, unknown>; credentials: Record<string, unknown> | null }) => ({
  id: i.id,
  settings: i.settings as GitSettings,
  credentials: i.credentials,
});
