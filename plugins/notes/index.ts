import { definePlugin, defineRead, schemas, withArticle } from '../../core/public.ts';
import { cascadeWithParents, parentParam, parentParams, parentType, parentKinds } from '../../lib/records/index.ts';
import { notesSection } from './bootstrap.ts';
import { Note, NoteVersion } from './entities.ts';
import { events } from './events.ts';
import { notesService } from './extensions.ts';
import { migrations } from './migrations.ts';
import { noteSearch } from './search.ts';
import { noteSchema } from './schemas.ts';
import { NoteService, noteSort, ORGANIZATION } from './service.ts';

const tags = ['Notes'];
const paged = { sort: noteSort };

/**
 * Notes of the organization and of projects, studies and assays: read-only on the public API
 * (no write route exists, so a write method on a notes path is an unknown route: 404 with the
 * envelope). Notes are provisioned by the bootstrap file and edited through the `notes.service`
 * extension point.
 */
export default definePlugin({
  name: 'notes',
  version: '1.0.0',
  description: 'Notes (read-only): organization notes and notes of projects, studies and assays',
  tags: {
    Notes: 'Notes of the organization and of projects, studies and assays (read-only).',
  },
  dependsOn: ['projects'],
  entities: [Note, NoteVersion],
  migrations,
  events,
  bootstrap: { notes: notesSection },
  setup(ctx) {
    const service = new NoteService(ctx.services);
    noteSearch.declare(ctx);
    ctx.provide(notesService, service);
    return service;
  },
  register(ctx, service) {
    const parents = parentKinds(ctx.services).all();
    // Deleting a project, study or assay deletes its notes (and their versions), in the same transaction.
    cascadeWithParents(ctx.services, 'note');
    const response = noteSchema([ORGANIZATION, ...parents.map((p) => p.kind)].map(parentType));
    ctx.read(
      defineRead({
        name: 'list_organization_notes',
        description: 'List the notes of the caller\'s organization (not archived; current content only).',
        path: '/organization-notes',
        tags,
        response,
        paged,
        run: (c, _input, page) => service.listOfOrganization(c, page),
      }),
    );
    ctx.read(
      defineRead({
        name: 'get_organization_note',
        description: 'Get one note of the caller\'s organization by id.',
        path: '/organization-notes/:id',
        tags,
        params: schemas.IdParams,
        response,
        run: (c, { id }) => service.getOfOrganization(c, id),
      }),
    );
    for (const parent of parents) {
      const base = `/${parent.segment}/:${parentParam(parent)}/notes`;
      ctx.read(
        defineRead({
          name: `list_${parent.kind}_notes`,
          description: `List the notes of one ${parent.kind} (not archived; current content only).`,
          path: base,
          tags,
          params: parentParams(parent),
          response,
          paged,
          run: (c, params, page) => service.listOf(c, parent, params, page),
        }),
      );
      ctx.read(
        defineRead({
          name: `get_${parent.kind}_note`,
          description: `Get one note of ${withArticle(parent.kind)} by id.`,
          path: `${base}/:id`,
          tags,
          params: parentParams(parent, 'id'),
          // A look-up tool takes the note's id alone; the REST path also names the parent.
          toolParams: schemas.IdParams,
          response,
          run: (c, params) => service.getOf(c, parent, params, String(params.id)),
        }),
      );
    }
  },
});
