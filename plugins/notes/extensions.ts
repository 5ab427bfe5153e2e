import { createExtensionPoint } from '../../core/public.ts';
import type { NoteService } from './service.ts';

export type { NewNote, NoteEdit, NoteParent, NoteDto } from './service.ts';

/**
 * The notes plugin's service: notes are not writable on the public API (spec, "Notes
 * (read-only)"), so they are created and edited through it (admin CLI bootstrap today, an
 * internal API later): `create(em, note)` and `edit(ctx, noteId, changes)`.
 */
export const notesService = createExtensionPoint<NoteService>('notes.service');
