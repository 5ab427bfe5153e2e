import { definePlugin, defineRead, defineWrite } from '../../core/public.ts';
import { studyExtensions } from '../studies/extensions.ts';
import { StudyRelationship } from './entities.ts';
import { events } from './events.ts';
import { migrations } from './migrations.ts';
import { CreateBody, RelationshipParams, StudyParams, StudyRelationshipSchema } from './schemas.ts';
import { relationshipSort, StudyRelationshipService } from './service.ts';

const tags = ['Study relationships'];

/** Study relationships: typed links between two studies, kept in pairs (each with its inverse). */
export default definePlugin({
  name: 'study-relationships',
  version: '1.0.0',
  description: 'Study relationships (list, create with inverse, delete both sides)',
  tags: {
    'Study relationships': 'Typed links between two studies; each is created with its inverse.',
  },
  dependsOn: ['studies'],
  entities: [StudyRelationship],
  migrations,
  events,
  setup(ctx) {
    const service = new StudyRelationshipService();
    // Deleting a study (or its project) removes its relationships on both sides, in the same transaction.
    ctx.use(studyExtensions).beforeDelete((op, studies) => service.deleteOfStudies(op, studies.map((s) => s.id)));
    return service;
  },
  register(ctx, service) {
    ctx.read(
      defineRead({
        name: 'list_study_relationships',
        description: 'List the relationships originating from a study (only those to studies the caller may view).',
        path: '/studies/:studyId/relationships',
        tags,
        params: StudyParams,
        response: StudyRelationshipSchema,
        paged: { sort: relationshipSort },
        run: (c, { studyId }, page) => service.list(c, studyId, page),
      }),
    );
    ctx.write(
      defineWrite({
        method: 'POST',
        operationId: 'create_study_relationship',
        description: 'Relate a study to another one; the inverse relationship is created on the target. Contributors of the source study.',
        path: '/studies/:studyId/relationships',
        tags,
        params: StudyParams,
        body: CreateBody,
        status: 201,
        errors: [403, 409],
        response: StudyRelationshipSchema,
        run: (c, { params, body }) => service.create(c, params.studyId, body),
      }),
    );
    ctx.write(
      defineWrite({
        method: 'DELETE',
        operationId: 'delete_study_relationship',
        description: 'Delete a relationship originating from the study, and its inverse. Contributors of the source study.',
        path: '/studies/:studyId/relationships/:relationshipId',
        tags,
        params: RelationshipParams,
        status: 204,
        errors: [403],
        run: (c, { params }) => service.delete(c, params.studyId, params.relationshipId),
      }),
    );
  },
});
