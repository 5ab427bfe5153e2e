import { listUnder, parentKinds } from '../../lib/records/index.ts';
import { definePlugin, defineRead, schemas, Type } from '../../core/public.ts';
import { events } from './events.ts';
import { migrations } from './migrations.ts';
import { ActivitySchema, CategoryQuery } from './schemas.ts';
import { activitySort, assertOrganizationUser, getActivity, listActivity, parseCategories } from './service.ts';

const tags = ['Activity'];
const paged = { sort: activitySort };

/**
 * The activity feed (read-only): records written by every plugin through the kernel's activity
 * service, newest first, filtered to what the caller may see.
 */
export default definePlugin({
  name: 'activity',
  version: '1.0.0',
  description: 'Activity feed: organization, per project/study/assay, per organization user',
  tags: {
    Activity: 'The audit trail: one record per change, filtered by what the caller may see.',
  },
  dependsOn: ['users', 'projects'],
  migrations,
  events,
  register(ctx) {
    ctx.read(
      defineRead({
        name: 'list_activities',
        description: 'List the activity the caller may see, newest first; optional category filter.',
        path: '/activity',
        tags,
        query: CategoryQuery,
        response: ActivitySchema,
        paged,
        run: (c, { category }, page) => listActivity(c, { categories: parseCategories(category) }, page),
      }),
    );
    ctx.read(
      defineRead({
        name: 'get_activity',
        description: 'Get one activity record by id.',
        path: '/activity/:id',
        tags,
        params: schemas.IdParams,
        response: ActivitySchema,
        run: (c, { id }) => getActivity(c, id),
      }),
    );
    // One feed per parent kind the enabled plugins registered (projects, studies, assays).
    for (const parent of parentKinds(ctx.services).all()) {
      const field = `${parent.kind}Id` as 'projectId' | 'studyId' | 'assayId';
      ctx.read(
        defineRead({
          name: `list_activities_by_${parent.kind}`,
          description: `List the activity of one ${parent.kind}, newest first.`,
          path: `/${parent.segment}/:id/activity`,
          tags,
          params: schemas.IdParams,
          query: CategoryQuery,
          response: ActivitySchema,
          paged,
          run(c, { id, category }, page) {
            const categories = parseCategories(category);
            return listUnder(c, parent, id, (guard) => listActivity(c, { [field]: id, categories, guard }, page));
          },
        }),
      );
    }
    ctx.read(
      defineRead({
        name: 'list_activities_by_user',
        description: 'List the activity performed by one organization user, newest first.',
        path: '/organization-users/:id/activity',
        tags,
        params: Type.Object({ id: schemas.Uuid({ description: 'Organization user id' }) }),
        query: CategoryQuery,
        response: ActivitySchema,
        paged,
        async run(c, { id, category }, page) {
          await assertOrganizationUser(c, id);
          return listActivity(c, { organizationUserId: id, categories: parseCategories(category) }, page);
        },
      }),
    );
  },
});
