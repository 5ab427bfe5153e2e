import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { schemas } from '../../core/public.ts';
import { lifecycleProperties } from '../../lib/records/index.ts';

export function studySchema(extra: Record<string, TSchema>) {
  return Type.Object({
    id: schemas.Uuid(),
    organizationId: schemas.Uuid(),
    projectId: schemas.Uuid({ description: 'Parent project' }),
    name: Type.String(),
    description: schemas.Nullable(Type.String()),
    startDate: schemas.Nullable(schemas.Timestamp({ description: 'ISO 8601 UTC' })),
    ...lifecycleProperties('study'),
    ...extra,
  });
}

export function createBodySchema(extra: Record<string, TSchema>) {
  return Type.Object({
    projectId: schemas.Uuid({ description: 'Parent project; the caller must be able to contribute to it' }),
    name: schemas.NotBlank({ maxLength: 255 }),
    description: Type.Optional(schemas.Nullable(Type.String({ maxLength: 10000 }))),
    startDate: Type.Optional(schemas.Nullable(schemas.DateInput())),
    ...extra,
  });
}

/** PUT merges: omitted fields keep their value. */
export function updateBodySchema(extra: Record<string, TSchema>) {
  return Type.Object({
    name: Type.Optional(schemas.NotBlank({ maxLength: 255 })),
    description: Type.Optional(schemas.Nullable(Type.String({ maxLength: 10000 }))),
    startDate: Type.Optional(schemas.Nullable(schemas.DateInput())),
    projectId: Type.Optional(schemas.Uuid({ description: 'Read-only here: move a study with PATCH /studies/{id}/move' })),
    status: Type.Optional(Type.String({ description: 'Read-only here: change it with POST /studies/{id}/status' })),
    version: Type.Optional(Type.Integer({ description: 'When given, the update fails with 409 unless it is the current version' })),
    ...extra,
  });
}


export type CreateBody = Static<ReturnType<typeof createBodySchema>> & Record<string, unknown>;
export type UpdateBody = Static<ReturnType<typeof updateBodySchema>> & Record<string, unknown>;
