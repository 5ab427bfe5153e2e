import { schemas, type Static, type TSchema, Type } from '../../core/public.ts';
import { describedBodyProperties, lifecycleProperties, lifecycleUpdateProperties } from '../../lib/records/index.ts';

/** An object of field name → value; the type's fields say which names and kinds of value. */
const ValuesSchema = (description: string) => Type.Object({}, { additionalProperties: true, description });

export function assaySchema(extra: Record<string, TSchema>) {
  return Type.Object({
    id: schemas.Uuid(),
    organizationId: schemas.Uuid(),
    projectId: schemas.Uuid({ description: 'The parent study\'s project (follows moves)' }),
    studyId: schemas.Uuid({ description: 'Parent study' }),
    assayTypeId: schemas.Uuid({ description: 'The assay type, fixed at creation' }),
    code: schemas.Nullable(Type.String({ description: 'Unique among the organization\'s assays when set' })),
    name: Type.String(),
    description: schemas.Nullable(Type.String()),
    startDate: schemas.Nullable(schemas.Timestamp({ description: 'ISO 8601 UTC' })),
    values: ValuesSchema('Values of the assay type\'s fields, by field name (DATE values: YYYY-MM-DD, or a UTC date-time)'),
    ...lifecycleProperties('assay'),
    ...extra,
  });
}

export function createBodySchema(extra: Record<string, TSchema>) {
  return Type.Object({
    studyId: schemas.Uuid({ description: 'Parent study; the caller must be able to contribute to its project' }),
    assayTypeId: schemas.Uuid({ description: 'An ACTIVE assay type of the organization' }),
    ...describedBodyProperties(false),
    values: Type.Optional(
      ValuesSchema('Values of the assay type\'s fields, by field name, checked against the type: every required field needs one'),
    ),
    ...extra,
  });
}

/** PUT merges: omitted fields keep their value; `values` are merged by name (null removes one). */
export function updateBodySchema(extra: Record<string, TSchema>) {
  return Type.Object({
    ...describedBodyProperties(true),
    values: Type.Optional(ValuesSchema('Merged into the current values by field name (null removes a value); the result is checked against the type')),
    studyId: Type.Optional(schemas.Uuid({ description: 'Read-only here: move an assay with PATCH /assays/{id}/move' })),
    assayTypeId: Type.Optional(schemas.Uuid({ description: 'Read-only: fixed at creation' })),
    ...lifecycleUpdateProperties('assays'),
    ...extra,
  });
}


export type CreateBody = Static<ReturnType<typeof createBodySchema>> & Record<string, unknown>;
export type UpdateBody = Static<ReturnType<typeof updateBodySchema>> & Record<string, unknown>;
