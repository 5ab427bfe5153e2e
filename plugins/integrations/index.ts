import { definePlugin, defineRead, defineWrite, schemas } from '../../core/public.ts';
import { integrationsSection, personalIntegrationsSection } from './bootstrap.ts';
import { events } from './events.ts';
import { migrations } from './migrations.ts';
import { IntegrationSchema, PersonalIntegrationSchema } from './schemas.ts';
import { IntegrationService, integrationSort, personalSort } from './service.ts';

/**
 * Organization integrations (read-only: made by the bootstrap file) and the caller's personal
 * connections. Credentials are sealed at rest (`services.secrets`) and never returned.
 */
export default definePlugin({
  name: 'integrations',
  version: '1.0.0',
  description: 'Organization integrations (list, get) and personal integrations (/me/integrations: list, get, disconnect)',
  tags: {
    Integrations: 'Connections of the organization to outside systems (ELN, Git, storage); credentials are never returned.',
    'Personal integrations': "The caller's own connections to outside systems (`/me/integrations`): list, get, disconnect.",
  },
  dependsOn: ['users'],
  migrations,
  events,
  bootstrap: { integrations: integrationsSection, personalIntegrations: personalIntegrationsSection },
  setup() {
    return new IntegrationService();
  },
  register(ctx, service) {
    ctx.read(
      defineRead({
        name: 'list_integrations',
        description: "List the organization's integrations (ELN and Git connections); settings only, never credentials.",
        path: '/integrations',
        tags: ['Integrations'],
        response: IntegrationSchema,
        paged: { sort: integrationSort },
        run: (c, _input, page) => service.list(c, page),
      }),
    );
    ctx.read(
      defineRead({
        name: 'get_integration',
        description: 'Get one organization integration by id; settings only, never credentials.',
        path: '/integrations/:id',
        tags: ['Integrations'],
        params: schemas.IdParams,
        response: IntegrationSchema,
        run: (c, { id }) => service.get(c, id),
      }),
    );
    const tags = ['Personal integrations'];
    ctx.read(
      defineRead({
        name: 'list_my_integrations',
        description: "List the caller's active personal connections to external services.",
        path: '/me/integrations',
        tags,
        tool: false,
        response: PersonalIntegrationSchema,
        paged: { sort: personalSort },
        run: (c, _input, page) => service.listMine(c, page),
      }),
    );
    ctx.read(
      defineRead({
        name: 'get_my_integration',
        description: "Get one of the caller's own active personal integrations (another user's id is a 404).",
        path: '/me/integrations/:id',
        tags,
        tool: false,
        params: schemas.IdParams,
        response: PersonalIntegrationSchema,
        run: (c, { id }) => service.getMine(c, id),
      }),
    );
    ctx.write(
      defineWrite({
        method: 'DELETE',
        operationId: 'delete_my_integration',
        description:
          'Disconnect one of your personal integrations: it is archived and its stored credentials are deleted; ' +
          'the storage drives and folders it backed are kept.',
        path: '/me/integrations/:id',
        tags,
        params: schemas.IdParams,
        status: 204,
        run: (c, { params }) => service.deleteMine(c, params.id),
      }),
    );
  },
});
