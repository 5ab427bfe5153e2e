import { definePlugin, RecordExtensions, registerLifecycleRecord, registerRecordKind, sql } from '../../core/public.ts';
import { studyExtensions } from '../studies/extensions.ts';
import { Assay } from './entities.ts';
import { events } from './events.ts';
import { migrations } from './migrations.ts';
import { assayCounters } from './counters.ts';
import { assayAccess, assayAccessById, assayExtensions, RESERVED_ASSAY_FIELDS, type AssayRecord } from './extensions.ts';
import { assaySchema, createBodySchema, updateBodySchema } from './schemas.ts';
import { AssayService, assaySort } from './service.ts';

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
    const extensions = new RecordExtensions<AssayRecord>('assay', RESERVED_ASSAY_FIELDS);
    const service = new AssayService(extensions);
    ctx.provide(assayExtensions, extensions);
    // Notes, tasks, links, folders and activity feeds attach to assays; provisioning moves them through INITIALIZING.
    registerRecordKind(ctx, {
      kind: 'assay',
      plural: 'assays',
      label: 'Assay',
      table: 'assay',
      entity: Assay,
      extensions,
      locate: (id) => sql`select s.project_id as "projectId", a.study_id as "studyId" from assay a join study s on s.id = a.study_id where a.id = ${id}`,
      access: (op, id) => assayAccessById(op, id),
      visible: (op, id) => {
        const access = assayAccess(op.services, op.actor, 'va');
        return sql`exists (select 1 from assay va ${access.join} where va.id = ${id} and ${access.visible} offset 0)`;
      },
    });
    // Deleting a study (also through its project) deletes its assays and, through this plugin's own hook, their children.
    ctx.use(studyExtensions).beforeDelete((op, studies) => service.deleteOfStudies(op, studies.map((s) => s.id)));
    return service;
  },
  register(ctx, service) {
    const { extensions } = service;
    registerLifecycleRecord(ctx, {
      kind: 'assay',
      plural: 'assays',
      tags,
      response: assaySchema(extensions.outputProperties()),
      sort: assaySort,
      createBody: createBodySchema(extensions.bodyProperties('create')),
      updateBody: updateBodySchema(extensions.bodyProperties('update')),
      service,
      parent: { kind: 'study', plural: 'studies', field: 'studyId' },
      describe: {
        list: 'List the assays the caller may view (those of studies of projects they may view).',
        create: 'Create an assay of an ACTIVE assay type in a study the caller contributes to; `values` are checked against the type.',
        update: 'Update an assay (omitted fields keep their value; `values` are merged by name). Contributors only.',
        delete: 'Delete an assay (and what is attached to it). Contributors only.',
      },
    });
  },
});
