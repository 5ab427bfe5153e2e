import { definePlugin, defineRead, defineWrite, withArticle } from '../../core/public.ts';
import { cascadeWithParents, parentParam, parentParams, parentProperties, parentKinds } from '../../lib/records/index.ts';
import { ExternalLink } from './entities.ts';
import { events } from './events.ts';
import { migrations } from './migrations.ts';
import { externalLinkSearch } from './search.ts';
import { createBodySchema, externalLinkSchema, updateBodySchema } from './schemas.ts';
import { ExternalLinkService, linkSort } from './service.ts';

const tags = ['External links'];

/**
 * External links (label + http(s) URL) of projects, studies and assays: the routes exist once per
 * parent kind the enabled plugins registered (`/projects/{projectId}/external-links`, ...).
 */
export default definePlugin({
  name: 'external-links',
  version: '1.0.0',
  description: 'External links of projects, studies and assays (list, get, create, update, delete)',
  tags: {
    'External links': 'Links from projects, studies and assays to outside pages.',
  },
  dependsOn: ['projects'],
  entities: [ExternalLink],
  migrations,
  events,
  setup(ctx) {
    externalLinkSearch.declare(ctx);
    return new ExternalLinkService();
  },
  register(ctx, service) {
    const parents = parentKinds(ctx.services).all();
    // Deleting a project, study or assay deletes its links, in the same transaction.
    cascadeWithParents(ctx.services, 'external_link');
    const response = externalLinkSchema(parentProperties(ctx.services));
    for (const parent of parents) {
      const base = `/${parent.segment}/:${parentParam(parent)}/external-links`;
      const one = `${base}/:linkId`;
      const ListParams = parentParams(parent);
      const LinkParams = parentParams(parent, 'linkId');
      ctx.read(
        defineRead({
          name: `list_${parent.kind}_external_links`,
          description: `List the external links of one ${parent.kind}.`,
          path: base,
          tags,
          params: ListParams,
          response,
          paged: { sort: linkSort },
          run: (c, params, page) => service.list(c, parent, params, page),
        }),
      );
      ctx.read(
        defineRead({
          name: `get_${parent.kind}_external_link`,
          description: `Get one external link of ${withArticle(parent.kind)}.`,
          path: one,
          tags,
          params: LinkParams,
          response,
          // The spec's agent tools list links only (no look-up tool).
          tool: false,
          run: (c, params) => service.get(c, parent, params, String(params.linkId)),
        }),
      );
      ctx.write(
        defineWrite({
          method: 'POST',
          operationId: `create_${parent.kind}_external_link`,
          description: `Add an external link to ${withArticle(parent.kind)}. Contributors only.`,
          path: base,
          tags,
          params: ListParams,
          body: createBodySchema,
          status: 201,
          errors: [403],
          response,
          run: (c, { params, body }) => service.create(c, parent, params, body),
        }),
      );
      ctx.write(
        defineWrite({
          method: 'PUT',
          operationId: `update_${parent.kind}_external_link`,
          description: `Update an external link of ${withArticle(parent.kind)} (omitted fields keep their value). Contributors only.`,
          path: one,
          tags,
          params: LinkParams,
          body: updateBodySchema,
          status: 200,
          errors: [403],
          response,
          run: (c, { params, body }) => service.update(c, parent, params, String(params.linkId), body),
        }),
      );
      ctx.write(
        defineWrite({
          method: 'DELETE',
          operationId: `delete_${parent.kind}_external_link`,
          description: `Delete an external link of ${withArticle(parent.kind)}. Contributors only.`,
          path: one,
          tags,
          params: LinkParams,
          status: 204,
          errors: [403],
          run: (c, { params }) => service.delete(c, parent, params, String(params.linkId)),
        }),
      );
    }
  },
});
