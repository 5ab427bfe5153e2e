import { definePlugin } from '../../core/public.ts';
import { lifecycleOperations, RecordExtensions } from '../../lib/records/index.ts';
import { Assay } from './entities.ts';
import { events } from './events.ts';
import { migrations } from './migrations.ts';
import { assayCounters } from './counters.ts';
import { assayExtensions, RESERVED_ASSAY_FIELDS, type AssayRecord } from './extensions.ts';
import { assaySearch } from './search.ts';
import { assaySchema, createBodySchema, updateBodySchema } from './schemas.ts';
import { assayRecords, assaySort } from './service.ts';

const tags = ['Assays'];

/** Assays: the records inside a study, each of one assay type; offers the `assays.records` extension point. */
export default definePlugin({
  name: 'assays',
  version: '1.0.0',
  description: 'Assays (list, get, create, update, status, archive, move, delete)',
  tags: {
    Assays: 'Assays inside a study, typed by an assay type whose fields their `values` follow.',
  },
  dependsOn: ['studies', 'assay-types'],
  entities: [Assay],
  migrations,
  events,
  setup(ctx) {
    ctx.services.counters.register(assayCounters);
    assaySearch.declare(ctx);
    const extensions = new RecordExtensions<AssayRecord>('assay', RESERVED_ASSAY_FIELDS);
    ctx.provide(assayExtensions, extensions);
    // Notes, tasks, links, folders and activity feeds attach to assays; provisioning moves them through INITIALIZING;
    // deleting a study (also through its project) deletes its assays and, through their own hooks, their children.
    return assayRecords(ctx, extensions);
  },
  register(ctx, service) {
    const { reads, writes } = lifecycleOperations(service, {
      tags,
      response: assaySchema,
      sort: assaySort,
      createBody: createBodySchema,
      updateBody: updateBodySchema,
      describe: {
        list: 'List the assays the caller may view (those of studies of projects they may view).',
        create: 'Create an assay of an ACTIVE assay type in a study the caller contributes to; `values` are checked against the type.',
        update: 'Update an assay (omitted fields keep their value; `values` are merged by name). Contributors only.',
        delete: 'Delete an assay (and what is attached to it). Contributors only.',
      },
    });
    reads.forEach((def) => ctx.read(def));
    writes.forEach((def) => ctx.write(def));
  },
});
