import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { schemas } from '../../core/public.ts';
import { describedBodyProperties, lifecycleProperties, lifecycleUpdateProperties } from '../../lib/records/index.ts';

export function studySchema(extra: Record<string, TSchema>) {
  return Type.Object({
    id: schemas.Uuid(),
    organizationId: schemas.Uuid(),
    projectId: schemas.Uuid({ description: 'Parent project' }),
    code: schemas.Nullable(Type.String({ description: 'Unique among the organization\'s studies when set' })),
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
    ...describedBodyProperties(false),
    ...extra,
  });
}

/** PUT merges: omitted fields keep their value. */
export function updateBodySchema(extra: Record<string, TSchema>) {
  return Type.Object({
    ...describedBodyProperties(true),
    projectId: Type.Optional(schemas.Uuid({ description: 'Read-only here: move a study with PATCH /studies/{id}/move' })),
    ...lifecycleUpdateProperties('studies'),
    ...extra,
  });
}


export type CreateBody = Static<ReturnType<typeof createBodySchema>> & Record<string, unknown>;
export type UpdateBody = Static<ReturnType<typeof updateBodySchema>> & Record<string, unknown>;
