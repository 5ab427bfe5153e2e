import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { DateInput, NotBlank, Nullable, Timestamp, Uuid } from '../../core/public.ts';
import { lifecycleProperties } from '../../lib/records/index.ts';

export function studySchema(extra: Record<string, TSchema>) {
  return Type.Object({
    id: Uuid(),
    organizationId: Uuid(),
    projectId: Uuid({ description: 'Parent project' }),
    name: Type.String(),
    description: Nullable(Type.String()),
    startDate: Nullable(Timestamp({ description: 'ISO 8601 UTC' })),
    ...lifecycleProperties('study'),
    ...extra,
  });
}

export function createBodySchema(extra: Record<string, TSchema>) {
  return Type.Object({
    projectId: Uuid({ description: 'Parent project; the caller must be able to contribute to it' }),
    name: NotBlank({ maxLength: 255 }),
    description: Type.Optional(Nullable(Type.String({ maxLength: 10000 }))),
    startDate: Type.Optional(Nullable(DateInput())),
    ...extra,
  });
}

/** PUT merges: omitted fields keep their value. */
export function updateBodySchema(extra: Record<string, TSchema>) {
  return Type.Object({
    name: Type.Optional(NotBlank({ maxLength: 255 })),
    description: Type.Optional(Nullable(Type.String({ maxLength: 10000 }))),
    startDate: Type.Optional(Nullable(DateInput())),
    projectId: Type.Optional(Uuid({ description: 'Read-only here: move a study with PATCH /studies/{id}/move' })),
    status: Type.Optional(Type.String({ description: 'Read-only here: change it with POST /studies/{id}/status' })),
    version: Type.Optional(Type.Integer({ description: 'When given, the update fails with 409 unless it is the current version' })),
    ...extra,
  });
}


export type CreateBody = Static<ReturnType<typeof createBodySchema>> & Record<string, unknown>;
export type UpdateBody = Static<ReturnType<typeof updateBodySchema>> & Record<string, unknown>;
