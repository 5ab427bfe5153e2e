import { schemas, type Static, Type } from '../../core/public.ts';

/** `elnA` on project create: link an existing ELN A folder. */
export const ProjectElnA = Type.Object(
  {
    integrationId: schemas.Uuid({ description: 'An organization integration of type ELN_A' }),
    folderId: schemas.NotBlank({ description: 'The id of an existing folder in ELN A; nothing is created there' }),
  },
  { description: "Links an existing ELN A folder as the project's notebook folder (create only)" },
);
export type ProjectElnA = Static<typeof ProjectElnA>;

/** `elnA` on study/assay create: a new folder under the parent's folder and an entry in it. */
export const RecordElnA = Type.Object(
  {
    templateId: Type.Optional(schemas.NotBlank({ description: 'ELN A template of the entry (blank entry when omitted)' })),
    templateFields: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), { description: "Values of the template's fields, by field name (needs templateId)" }),
    ),
  },
  { description: "Creates a folder under the parent's ELN A folder and a notebook entry in it (create only)" },
);
export type RecordElnA = Static<typeof RecordElnA>;

/** The link as responses show it; folderId/entryId are null until provisioning has created them. */
export const ProjectElnALink = Type.Object({ integrationId: schemas.Uuid(), folderId: Type.String() }, { description: 'The linked ELN A folder' });

export const RecordElnALink = Type.Object(
  {
    integrationId: schemas.Uuid(),
    folderId: schemas.Nullable(Type.String()),
    entryId: schemas.Nullable(Type.String()),
    templateId: schemas.Nullable(Type.String()),
  },
  { description: 'The ELN A folder and entry of this record (null while provisioning is pending)' },
);
