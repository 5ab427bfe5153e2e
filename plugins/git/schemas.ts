import { schemas, type Static, Type } from '../../core/public.ts';

export const DefaultGitGroup = Type.Object(
  {
    integrationId: schemas.Uuid({ description: 'A GIT integration of the organization (or a personal one of the caller)' }),
    groupId: schemas.NotBlank({ maxLength: 255, description: "The group (namespace) in the Git provider: its id or path" }),
  },
);

/**
 * The project request field: `null` on update clears the default. OpenAPI 3.0's `nullable`
 * (which Ajv understands) rather than a union, so a bad value gets errors about its fields only.
 */
export const DefaultGitGroupField = Type.Object(DefaultGitGroup.properties, {
  nullable: true,
  description:
    'Pre-selection of the Git group used when repositories are created for the studies or assays of the project; ' +
    'no repository is created for the project. A default that no longer resolves is ignored. `null` clears it.',
});

/** The project response field. */
export const DefaultGitGroupOutput = Type.Object(DefaultGitGroup.properties, {
  nullable: true,
  description: 'The default Git group as stored; null when none',
});

export type DefaultGitGroupValue = Static<typeof DefaultGitGroup>;

/** A repository name: one path segment the providers accept (GitLab paths, directory names). */
export const RepositoryName = Type.String({
  pattern: '^[A-Za-z0-9_][A-Za-z0-9_.-]*$',
  maxLength: 100,
  description: 'Repository name (letters, digits, `_`, `.`, `-`); default: the record name as a slug plus a short id',
});

export const CreateRepositoryBody = Type.Object({
  integrationId: Type.Optional(schemas.Uuid({ description: "With groupId: where to create it. Both omitted: the project's defaultGitGroup" })),
  groupId: Type.Optional(schemas.NotBlank({ maxLength: 255 })),
  name: Type.Optional(RepositoryName),
});

export type CreateRepositoryInput = Static<typeof CreateRepositoryBody>;

export const RecordParams = Type.Object({ id: schemas.Uuid() });

export const repositorySchema = (parentTypes: string[]) =>
  Type.Object({
    id: schemas.Uuid(),
    parentType: schemas.StringEnum(parentTypes, { description: 'The kind of record the repository was created for' }),
    parentId: schemas.Uuid(),
    integrationId: schemas.Uuid(),
    groupId: Type.String(),
    name: Type.String(),
    externalId: Type.String({ description: "The provider's id of the repository" }),
    url: Type.String({ description: 'Clone URL' }),
    createdAt: schemas.Timestamp(),
  }, { title: 'GitRepository' });
