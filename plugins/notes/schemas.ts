import { Nullable, StringEnum, Timestamp, Type, Uuid } from '../../core/public.ts';

export const NOTE_TYPES = ['NOTE', 'COMMENT', 'CONCLUSION', 'TEMPLATE'] as const;
export const NOTE_FORMATS = ['TIPTAP', 'MARKDOWN', 'TEXT', 'QUILL'] as const;
export type NoteType = (typeof NOTE_TYPES)[number];
export type NoteFormat = (typeof NOTE_FORMATS)[number];

/** The note as both surfaces return it; `parentTypes` are `ORGANIZATION` and the registered parent kinds. */
export function noteSchema(parentTypes: string[]) {
  return Type.Object({
    id: Uuid(),
    organizationId: Uuid(),
    parentType: StringEnum(parentTypes, { description: 'What the note is attached to' }),
    parentId: Uuid({ description: 'Id of the organization, project, study or assay the note is attached to' }),
    type: StringEnum(NOTE_TYPES),
    format: StringEnum(NOTE_FORMATS, { description: 'How `content` is to be read' }),
    content: Type.String({ description: 'Body of the current version (earlier versions are not exposed)' }),
    version: Type.Integer({ description: 'Number of the current version; each content edit adds one' }),
    createdById: Nullable(Uuid({ description: 'Organization user who created the note; null for provisioned notes' })),
    createdAt: Timestamp(),
    updatedAt: Timestamp({ description: 'Time of the last edit' }),
  }, { title: 'Note' });
}
