import { definePlugin, defineRead, defineWrite, withArticle } from '../../core/public.ts';
import { parentType, parentKinds } from '../../lib/records/index.ts';
import { projectExtensions } from '../projects/extensions.ts';
import { events } from './events.ts';
import { findGitIntegration } from './integrations.ts';
import { migrations } from './migrations.ts';
import { CreateRepositoryBody, DefaultGitGroupField, DefaultGitGroupOutput, RecordParams, repositorySchema, type DefaultGitGroupValue } from './schemas.ts';
import { GitService, REPOSITORY_KINDS } from './service.ts';

const tags = ['Git (extension)'];
const EXTENSION = 'Extension of the v1 API (not in the published specification).';

/**
 * Git: the projects' `defaultGitGroup` field, and a repository per study or assay, created on
 * request in a GIT integration's group (a GitLab-style service, or bare repositories on a local path).
 */
export default definePlugin({
  name: 'git',
  version: '1.0.0',
  description: 'Git: default group of a project; a repository for a study or an assay',
  tags: {
    'Git (extension)': 'Git repositories created for studies and assays through a Git integration (extension of v1).',
  },
  dependsOn: ['projects', 'integrations'],
  migrations,
  events,
  setup(ctx) {
    const service = new GitService(findGitIntegration);
    const projects = ctx.use(projectExtensions);
    projects.addField({
      name: 'defaultGitGroup',
      plugin: 'git',
      schema: DefaultGitGroupField,
      onUpdate: true,
      save: (op, project, value) => service.saveDefault(op, project, value as DefaultGitGroupValue | null),
    });
    projects.addOutput({ name: 'defaultGitGroup', plugin: 'git', schema: DefaultGitGroupOutput, select: (id) => service.defaultJson(id), keepNull: true });
    projects.beforeDelete((op, records) => service.deleteDefaults(op, records.map((r) => r.id)));
    return service;
  },
  register(ctx, service) {
    // Studies and assays are optional: their routes exist when their plugins are enabled.
    const parents = REPOSITORY_KINDS.map((kind) => parentKinds(ctx.services).get(kind)).filter((p) => p !== undefined);
    const response = repositorySchema(parents.map((p) => parentType(p.kind)));
    for (const parent of parents) {
      // Deleting the record forgets its repository (the repository itself stays in the provider).
      parent.beforeDelete((op, ids) => service.deleteOf(op, parent.kind, ids));
      const path = `/${parent.segment}/:id/git-repository`;
      ctx.read(
        defineRead({
          name: `get_${parent.kind}_git_repository`,
          description: `${EXTENSION} Get the Git repository created for ${withArticle(parent.kind)} (404 when it has none).`,
          path,
          tags,
          params: RecordParams,
          response,
          // The spec's 52 agent tools do not include it: REST only.
          tool: false,
          run: (c, { id }) => service.get(c, parent, id),
        }),
      );
      ctx.write(
        defineWrite({
          method: 'POST',
          operationId: `create_${parent.kind}_git_repository`,
          description:
            `${EXTENSION} Create a Git repository for ${withArticle(parent.kind)}, named from it, in the given integration and group ` +
            "or else in the project's defaultGitGroup (when it still resolves). 201 when created; 200 with the existing one " +
            `when the ${parent.kind} has one already. 502/504 when the Git provider fails or does not answer (nothing is stored). Contributors only.`,
          path,
          tags,
          params: RecordParams,
          body: CreateRepositoryBody,
          status: 201,
          errors: [403, 409],
          alternativeStatus: 200,
          response,
          run: (c, { params, body }) => service.create(c, parent, params.id, body ?? {}),
        }),
      );
    }
  },
});
