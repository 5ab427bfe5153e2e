import { db, defineEntity, p } from '../../core/public.ts';
import { attachedProperties } from '../../lib/records/index.ts';

/** A note; its content lives in versions, `currentVersion` names the one exposed. */
export const Note = defineEntity({
  name: 'Note',
  tableName: 'note',
  properties: {
    // parentKind: `organization` or a registered parent kind (`project`, `study`, `assay`).
    ...attachedProperties(),
    type: p.string(),
    format: p.string(),
    archived: p.boolean(),
    createdById: p.uuid().nullable(),
    createdAt: p.datetime().onCreate(db.creationTime),
    updatedAt: p.datetime().onCreate(db.creationTime),
    currentVersion: p.integer(),
  },
});

/** One version of a note's content; an edit adds one, none is ever changed. */
export const NoteVersion = defineEntity({
  name: 'NoteVersion',
  tableName: 'note_version',
  properties: {
    noteId: p.uuid().primary(),
    version: p.integer().primary(),
    organizationId: p.uuid(),
    content: p.text(),
    createdById: p.uuid().nullable(),
    createdAt: p.datetime().onCreate(db.creationTime),
  },
});
