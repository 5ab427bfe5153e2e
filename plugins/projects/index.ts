import { definePlugin } from '../../core/public.ts';
import { lifecycleOperations, RecordExtensions } from '../../lib/records/index.ts';
import { Project } from './entities.ts';
import { events } from './events.ts';
import { migrations } from './migrations.ts';
import { projectCounters } from './counters.ts';
import { projectExtensions, RESERVED_PROJECT_FIELDS, type ProjectRecord } from './extensions.ts';
import { projectSearch } from './search.ts';
import { createBodySchema, projectSchema, updateBodySchema } from './schemas.ts';
import { projectRecords, projectSort } from './service.ts';

const tags = ['Projects'];

/** Projects: the root of visibility and membership; offers the `projects.records` extension point. */
export default definePlugin({
  name: 'projects',
  version: '1.0.0',
  description: 'Projects (list, get, create, update, status, archive, delete)',
  tags: {
    Projects: 'The top of the record tree: projects contain studies, which contain assays. Visibility PUBLIC, PROTECTED or PRIVATE.',
  },
  dependsOn: ['users'],
  entities: [Project],
  migrations,
  events,
  setup(ctx) {
    ctx.services.counters.register(projectCounters);
    projectSearch.declare(ctx);
    const extensions = new RecordExtensions<ProjectRecord>('project', RESERVED_PROJECT_FIELDS);
    ctx.provide(projectExtensions, extensions);
    return projectRecords(ctx, extensions);
  },
  register(ctx, service) {
    const { reads, writes } = lifecycleOperations(service, {
      tags,
      response: projectSchema,
      sort: projectSort,
      createBody: createBodySchema,
      updateBody: updateBodySchema,
      describe: {
        create: 'Create a project; the caller becomes its member.',
        delete: 'Delete a project and everything in it (studies, assays, ...). Contributors only.',
      },
    });
    reads.forEach((def) => ctx.read(def));
    writes.forEach((def) => ctx.write(def));
  },
});
