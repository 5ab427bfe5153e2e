import { schemas, type Static, Type } from '../../core/public.ts';
import { ASSAY_TYPE_STATUSES, FIELD_TYPES } from './extensions.ts';

/** Statuses a type may be created in; the others are reached through the status operation. */
export const CREATE_STATUSES = ['DRAFT', 'ACTIVE'] as const;

const FIELD_NAME = '^[A-Za-z][A-Za-z0-9_]*$';
const MAX_FIELDS = 200;
const MAX_TASKS = 200;

const fieldDescription = {
  name: 'Identifier: a letter, then letters, digits or underscores; unique within the type (case-insensitive). The key of the value in an assay\'s `values`',
  displayName: 'Label shown to people',
  type: 'TEXT (string), LONG_TEXT (a string shown on several lines), NUMBER (any number), INTEGER, BOOLEAN, DATE (YYYY-MM-DD or ISO 8601 date-time), CHOICE (one of `options`) or FILE (a file reference: a path or URL string, or an object of name, path and url strings)',
  required: 'A new assay of the type must carry a value for the field',
  options: 'CHOICE fields only: the allowed values (non-empty, no repeats)',
  defaultValue: 'The value a new record gets when it is given none: a value of the field\'s type, or null for no default',
};

export const AssayFieldSchema = Type.Object(
  {
    name: Type.String({ description: fieldDescription.name }),
    displayName: Type.String({ description: fieldDescription.displayName }),
    type: schemas.StringEnum(FIELD_TYPES, { description: fieldDescription.type }),
    required: Type.Boolean({ description: fieldDescription.required }),
    description: schemas.Nullable(Type.String()),
    options: schemas.Nullable(Type.Array(Type.String(), { description: 'The allowed values of a CHOICE field; null for the other types' })),
    defaultValue: Type.Unknown({ description: fieldDescription.defaultValue }),
  },
  { description: 'A metadata field: each assay of the type carries a value for it in `values`' },
);

export const StandardTaskSchema = Type.Object(
  {
    label: Type.String(),
    order: Type.Integer({ description: 'Position among the type\'s tasks (ascending)' }),
    fields: Type.Array(AssayFieldSchema, { description: 'The task\'s form: fields filled in on each task made from it (the task\'s `data`)' }),
  },
  { description: 'A standard task: created as a task of every new assay of the type' },
);

export const AssayTypeSchema = Type.Object({
  id: schemas.Uuid(),
  organizationId: schemas.Uuid(),
  name: Type.String({ description: 'Unique (case-insensitive) among the organization\'s assay types that are not DELETED' }),
  description: schemas.Nullable(Type.String()),
  status: schemas.StringEnum(ASSAY_TYPE_STATUSES, { description: 'Changed only through the status operation (DELETED through DELETE)' }),
  fields: Type.Array(AssayFieldSchema),
  tasks: Type.Array(StandardTaskSchema, { description: 'Ordered by `order`' }),
  createdById: schemas.Nullable(schemas.Uuid({ description: 'Organization user who created the type; null when provisioned by the bootstrap file' })),
  createdAt: schemas.Timestamp(),
  updatedAt: schemas.Timestamp(),
  version: Type.Integer({ description: 'Optimistic-lock version; send it back on update to detect concurrent changes' }),
});

const FieldInput = Type.Object({
  name: Type.String({ pattern: FIELD_NAME, maxLength: 64, description: fieldDescription.name }),
  displayName: schemas.NotBlank({ maxLength: 255, description: fieldDescription.displayName }),
  type: schemas.StringEnum(FIELD_TYPES, { description: fieldDescription.type }),
  required: Type.Optional(Type.Boolean({ default: false, description: `${fieldDescription.required} (default false)` })),
  description: Type.Optional(schemas.Nullable(Type.String({ maxLength: 10000 }))),
  // null (as a GET shows it on the other types) is the same as no options: a field read back is accepted as it is.
  options: Type.Optional(schemas.Nullable(Type.Array(schemas.NotBlank({ maxLength: 255 }), { minItems: 1, maxItems: 500, description: fieldDescription.options }))),
  defaultValue: Type.Optional(Type.Unknown({ description: `${fieldDescription.defaultValue} (default null)` })),
});

const TaskInput = Type.Object({
  label: schemas.NotBlank({ maxLength: 255 }),
  order: Type.Optional(Type.Integer({ minimum: 0, maximum: 100000, description: 'Position (ascending); default: the task\'s index in the list' })),
  fields: Type.Optional(Type.Array(FieldInput, { maxItems: MAX_FIELDS, description: 'The task\'s form: fields, with the rules of the type\'s fields (default none)' })),
});

const definition = {
  fields: Type.Optional(Type.Array(FieldInput, { maxItems: MAX_FIELDS, description: 'The metadata fields (replaces them all on update)' })),
  tasks: Type.Optional(Type.Array(TaskInput, { maxItems: MAX_TASKS, description: 'The standard tasks (replaces them all on update)' })),
};

export const CreateBody = Type.Object({
  name: schemas.NotBlank({ maxLength: 255 }),
  description: Type.Optional(schemas.Nullable(Type.String({ maxLength: 10000 }))),
  status: Type.Optional(schemas.StringEnum(CREATE_STATUSES, { description: 'DRAFT (default) or ACTIVE' })),
  ...definition,
});

/** PUT merges: omitted fields keep their value; `fields` and `tasks`, when given, replace the lists. */
export const UpdateBody = Type.Object({
  name: Type.Optional(schemas.NotBlank({ maxLength: 255 })),
  description: Type.Optional(schemas.Nullable(Type.String({ maxLength: 10000 }))),
  ...definition,
  status: Type.Optional(Type.String({ description: 'Read-only here: change it with POST /assay-types/{id}/status' })),
  version: Type.Optional(Type.Integer({ description: 'When given, the update fails with 409 unless it is the current version' })),
});

export const StatusBody = Type.Object({ status: schemas.StringEnum(ASSAY_TYPE_STATUSES) });

export type CreateBody = Static<typeof CreateBody>;
export type UpdateBody = Static<typeof UpdateBody>;
export type FieldInput = Static<typeof FieldInput>;
export type TaskInput = Static<typeof TaskInput>;
