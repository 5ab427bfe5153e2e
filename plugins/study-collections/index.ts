import { definePlugin, defineRead, defineWrite, schemas, sql } from '../../core/public.ts';
import { collectionVisibleTo } from './extensions.ts';
import { studyExtensions, studyReader } from '../studies/extensions.ts';
import { StudyCollection, StudyCollectionStudy } from './entities.ts';
import { events } from './events.ts';
import { migrations } from './migrations.ts';
import { collectionDetailSchema, CreateBody, MembershipParams, StudyCollectionSchema, UpdateBody } from './schemas.ts';
import { collectionSort, StudyCollectionService } from './service.ts';

const tags = ['Study collections'];

/** Study collections: named, visibility-scoped sets of studies across projects. */
export default definePlugin({
  name: 'study-collections',
  version: '1.0.0',
  description: 'Study collections (list, get, create, update, delete, add and remove studies)',
  tags: {
    'Study collections': 'Named sets of studies across projects, with their own visibility and owner.',
  },
  dependsOn: ['studies'],
  entities: [StudyCollection, StudyCollectionStudy],
  migrations,
  events,
  setup(ctx) {
    const service = new StudyCollectionService(ctx.use(studyReader));
    ctx.services.activity.reference(ctx.plugin, 'study_collection', (op, id) =>
      sql`exists (select 1 from study_collection rc where rc.id = ${id} and ${collectionVisibleTo(op.actor, 'rc')} offset 0)`);
    // Deleting a study (or its project) takes it out of every collection, in the same transaction.
    ctx.use(studyExtensions).beforeDelete((op, studies) => service.removeStudies(op, studies.map((s) => s.id)));
    return service;
  },
  register(ctx, service) {
    const Detail = collectionDetailSchema(service.studies.schema());
    ctx.read(
      defineRead({
        name: 'list_study_collections',
        description: 'List the study collections the caller may view (without their studies; see studyCount).',
        path: '/study-collections',
        tags,
        response: StudyCollectionSchema,
        paged: { sort: collectionSort },
        run: (c, _input, page) => service.list(c, page),
      }),
    );
    ctx.read(
      defineRead({
        name: 'get_study_collection',
        description: 'Get one study collection by id, with the studies in it that the caller may view.',
        path: '/study-collections/:id',
        tags,
        params: schemas.IdParams,
        response: Detail,
        run: (c, { id }) => service.get(c, id),
      }),
    );
    ctx.write(
      defineWrite({
        method: 'POST',
        operationId: 'create_study_collection',
        description: 'Create a study collection; the caller owns it.',
        path: '/study-collections',
        tags,
        body: CreateBody,
        status: 201,
        response: Detail,
        run: (c, { body }) => service.create(c, body),
      }),
    );
    ctx.write(
      defineWrite({
        method: 'PUT',
        operationId: 'update_study_collection',
        description: 'Update a study collection (omitted fields keep their value). Owner, admin, or anyone for a PUBLIC one; visibility: owner or admin.',
        path: '/study-collections/:id',
        tags,
        params: schemas.IdParams,
        body: UpdateBody,
        status: 200,
        errors: [403],
        response: Detail,
        run: (c, { params, body }) => service.update(c, params.id, body),
      }),
    );
    ctx.write(
      defineWrite({
        method: 'DELETE',
        operationId: 'delete_study_collection',
        description: 'Delete a study collection (its studies stay). Owner or admin.',
        path: '/study-collections/:id',
        tags,
        params: schemas.IdParams,
        status: 204,
        errors: [403],
        run: (c, { params }) => service.delete(c, params.id),
      }),
    );
    ctx.write(
      defineWrite({
        method: 'POST',
        operationId: 'add_study_to_collection',
        description: 'Add a study the caller may view to a collection they may change (idempotent); returns the collection.',
        path: '/study-collections/:id/studies/:studyId',
        tags,
        params: MembershipParams,
        status: 200,
        errors: [403],
        response: Detail,
        run: (c, { params }) => service.addStudy(c, params.id, params.studyId),
      }),
    );
    ctx.write(
      defineWrite({
        method: 'DELETE',
        operationId: 'remove_study_from_collection',
        description: 'Remove a study from a collection (idempotent).',
        path: '/study-collections/:id/studies/:studyId',
        tags,
        params: MembershipParams,
        status: 204,
        errors: [403],
        run: (c, { params }) => service.removeStudy(c, params.id, params.studyId),
      }),
    );
  },
});
