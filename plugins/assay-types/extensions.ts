import { db, type EntityManager, raw, sql } from '../../core/public.ts';

/** Checking values against fields: an assay's against its type's, a task's against its form. */
export { checkFieldValue, validateValues, type Values } from './values.ts';

/** Assay type status values (spec, "Status enumerations"). */
export const ASSAY_TYPE_STATUSES = ['DRAFT', 'ACTIVE', 'INACTIVE', 'ARCHIVED', 'DELETED'] as const;
export type AssayTypeStatus = (typeof ASSAY_TYPE_STATUSES)[number];

/** Kinds of metadata field an assay type defines; an assay's value must match its field's kind. */
export const FIELD_TYPES = ['TEXT', 'LONG_TEXT', 'NUMBER', 'INTEGER', 'BOOLEAN', 'DATE', 'CHOICE', 'FILE'] as const;
export type FieldType = (typeof FIELD_TYPES)[number];

/** One metadata field of an assay type, as stored and returned. */
export interface AssayFieldDefinition {
  /** Identifier, unique within the type: the key of the value in an assay's `values`. */
  name: string;
  displayName: string;
  type: FieldType;
  required: boolean;
  description: string | null;
  /** The allowed values of a CHOICE field; null for the other types. */
  options: string[] | null;
  /** The value a new record gets when it is given none (a value of the field's type), or null. */
  defaultValue: unknown;
}

/** A standard task of an assay type: created as a task of every new assay of the type. */
export interface StandardTask {
  label: string;
  order: number;
  /** The task's form: fields filled in on the task (its `data`), as an assay type's fields. */
  fields: AssayFieldDefinition[];
}

/** An assay type as other plugins see it. */
export interface AssayTypeRecord {
  id: string;
  organizationId: string;
  name: string;
  status: AssayTypeStatus;
  fields: AssayFieldDefinition[];
  tasks: StandardTask[];
}

/**
 * An assay type of the organization, or undefined. DELETED types are left out unless asked for:
 * they can no longer be used, but assays created earlier still refer to them (and their fields).
 */
export async function findAssayType(
  em: EntityManager,
  organizationId: string,
  id: string,
  opts: { includeDeleted?: boolean } = {},
): Promise<AssayTypeRecord | undefined> {
  const live = opts.includeDeleted ? raw('') : raw(` and t.status <> 'DELETED'`);
  return db.queryOne<AssayTypeRecord>(
    em,
    sql`select t.id, t.organization_id as "organizationId", t.name, t.status, t.fields, t.tasks
          from assay_type t where t.id = ${id} and t.organization_id = ${organizationId}${live}`,
  );
}

/**
 * The standard tasks of an assay type, in order: what the tasks plugin creates for a new assay
 * (from an `assays.records` onCreate hook, inside the assay's create transaction).
 */
export async function standardTasks(em: EntityManager, organizationId: string, assayTypeId: string): Promise<StandardTask[]> {
  const type = await findAssayType(em, organizationId, assayTypeId, { includeDeleted: true });
  return type?.tasks ?? [];
}
