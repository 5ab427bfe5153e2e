import { schemas, type Static, Type } from '../../core/public.ts';

/** `elnB` on project create: link an existing ELN B project container. */
export const ProjectElnB = Type.Object(
  {
    integrationId: schemas.Uuid({ description: 'An organization integration of type ELN_B' }),
    projectId: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'The number of an existing ELN B project (container); nothing is created there' }),
  },
  { description: "Links an existing ELN B project container as the project's notebook container (create only)" },
);
export type ProjectElnB = Static<typeof ProjectElnB>;

/** `useElnB` on study/assay create. */
export const UseElnB = Type.Boolean({ description: "true: a notebook entry is created in the project's ELN B container (create only)" });

/** The link as responses show it (`elnB`); entryId is null until provisioning has created the entry. */
export const ProjectElnBLink = Type.Object({ integrationId: schemas.Uuid(), projectId: Type.Integer() }, { description: 'The linked ELN B project container' });

export const RecordElnBLink = Type.Object(
  { integrationId: schemas.Uuid(), projectId: Type.Integer(), entryId: schemas.Nullable(Type.Integer()) },
  { description: "This record's entry in its project's ELN B container (entryId null while provisioning is pending)" },
);
