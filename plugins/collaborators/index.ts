import { definePlugin } from '../../core/public.ts';
import { Collaborator } from './entities.ts';
import { events } from './events.ts';
import { migrations } from './migrations.ts';
import { collaboratorSchema, createBodySchema, updateBodySchema } from './schemas.ts';
import { collaboratorRecords, collaboratorSort, EDITABLE } from './service.ts';
import { addStudyCollaborator } from './study-collaborator.ts';

const tags = ['Collaborators'];

/** Collaborators: the organization's external partner organizations (full CRUD). */
export default definePlugin({
  name: 'collaborators',
  version: '1.0.0',
  description: 'Collaborators, i.e. external organizations (list, get, create, update, delete)',
  tags: {
    Collaborators: 'External organizations the lab works with.',
  },
  entities: [Collaborator],
  migrations,
  events,
  setup(ctx) {
    addStudyCollaborator(ctx);
    return collaboratorRecords();
  },
  register(ctx, records) {
    const response = collaboratorSchema;
    for (const read of records.reads({ tags, response, sort: collaboratorSort })) ctx.read(read);
    ctx.write(
      records.createWrite({
        tags,
        response,
        body: createBodySchema,
        values: (body) => ({
          label: body.label,
          organizationName: body.organizationName ?? null,
          organizationLocation: body.organizationLocation ?? null,
          contactPersonName: body.contactPersonName ?? null,
          contactEmail: body.contactEmail ?? null,
          code: body.code ?? null,
          active: body.active ?? true,
        }),
      }),
    );
    ctx.write(records.updateWrite({ tags, response, body: updateBodySchema, editable: [...EDITABLE] }));
    ctx.write(records.deleteWrite({ tags }));
  },
});
