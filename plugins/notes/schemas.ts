import { schemas, Type } from '../../core/public.ts';

export const NOTE_TYPES = ['NOTE', 'COMMENT', 'CONCLUSION', 'TEMPLATE'] as const;
export const NOTE_FORMATS = ['TIPTAP', 'MARKDOWN', 'TEXT', 'QUILL'] as const;
export type NoteType = (typeof NOTE_TYPES)[number];
export type NoteFormat = (typeof NOTE_FORMATS)[number];

/** The note as both surfaces return it; `parentTypes` are `ORGANIZATION` and the registered parent kinds. */
export function noteSchema(parentTypes: string[]) {
  return Type.Object({
    id: schemas.Uuid(),
    organizationId: schemas.Uuid(),
    parentType: schemas.StringEnum(parentTypes, { description: 'What the note is attached to' }),
    parentId: schemas.Uuid({ description: 'Id of the organization, project, study or assay the note is attached to' }),
    type: schemas.StringEnum(NOTE_TYPES),
    format: schemas.StringEnum(NOTE_FORMATS, { description: 'How `content` is to be read' }),
    content: Type.String({ description: 'Body of the current version (earlier versions are not exposed)' }),
    version: Type.Integer({ description: 'Number of the current version; each content edit adds one' }),
    createdById: schemas.Nullable(schemas.Uuid({ description: 'Organization user who created the note; null for provisioned notes' })),
    createdAt: schemas.Timestamp(),
    updatedAt: schemas.Timestamp({ description: 'Time of the last edit' }),
  }, { title: 'Note' });
}
