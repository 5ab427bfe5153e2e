import { definePlugin } from '../../core/public.ts';
import { lifecycleOperations, RecordExtensions } from '../../lib/records/index.ts';
import { Study } from './entities.ts';
import { events } from './events.ts';
import { migrations } from './migrations.ts';
import { studyCounters } from './counters.ts';
import { RESERVED_STUDY_FIELDS, studyExtensions, studyReader, type StudyRecord } from './extensions.ts';
import { studySearch } from './search.ts';
import { createBodySchema, studySchema, updateBodySchema } from './schemas.ts';
import { studyRecords, studySort } from './service.ts';

const tags = ['Studies'];

/** Studies: the records inside a project; offers the `studies.records` extension point. */
export default definePlugin({
  name: 'studies',
  version: '1.0.0',
  description: 'Studies (list, get, create, update, status, archive, move, delete)',
  tags: {
    Studies: "Studies inside a project; they follow the project's visibility.",
  },
  dependsOn: ['projects'],
  entities: [Study],
  migrations,
  events,
  setup(ctx) {
    ctx.services.counters.register(studyCounters);
    studySearch.declare(ctx);
    const extensions = new RecordExtensions<StudyRecord>('study', RESERVED_STUDY_FIELDS);
    ctx.provide(studyExtensions, extensions);
    // Deleting a project deletes its studies (and, through their own hooks, their children).
    const service = studyRecords(ctx, extensions);
    ctx.provide(studyReader, { schema: () => studySchema(extensions.outputProperties()), visible: (c, where) => service.visible(c, where) });
    return service;
  },
  register(ctx, service) {
    const { reads, writes } = lifecycleOperations(service, {
      tags,
      response: studySchema,
      sort: studySort,
      createBody: createBodySchema,
      updateBody: updateBodySchema,
      describe: {
        list: 'List the studies the caller may view (those of projects they may view).',
        create: 'Create a study in a project the caller contributes to.',
        delete: 'Delete a study and its assays. Contributors only.',
      },
    });
    reads.forEach((def) => ctx.read(def));
    writes.forEach((def) => ctx.write(def));
  },
});
