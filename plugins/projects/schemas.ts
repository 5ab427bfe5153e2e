import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { schemas, VISIBILITIES } from '../../core/public.ts';
import { lifecycleProperties, lifecycleUpdateProperties } from '../../lib/records/index.ts';


const Visibility = schemas.StringEnum(VISIBILITIES, { description: 'Who may view the project' });

/** The project as both surfaces return it; contributed response fields are merged in. */
export function projectSchema(extra: Record<string, TSchema>) {
  return Type.Object({
      id: schemas.Uuid(),
      organizationId: schemas.Uuid(),
      code: Type.String(),
      name: Type.String(),
      description: Type.String(),
      visibility: Visibility,
      ...lifecycleProperties('project'),
      ...extra,
  });
}

export function createBodySchema(extra: Record<string, TSchema>) {
  return Type.Object({
    code: schemas.NotBlank({ maxLength: 64 }),
    name: schemas.NotBlank({ maxLength: 255 }),
    description: schemas.NotBlank({ maxLength: 10000 }),
    visibility: Type.Optional(schemas.StringEnum(VISIBILITIES, { description: 'Who may view the project; defaults to PRIVATE' })),
    ...extra,
  });
}

/** PUT merges: omitted fields keep their value; present ones follow the create rules. */
export function updateBodySchema(extra: Record<string, TSchema>) {
  return Type.Object({
    code: Type.Optional(schemas.NotBlank({ maxLength: 64 })),
    name: Type.Optional(schemas.NotBlank({ maxLength: 255 })),
    description: Type.Optional(schemas.NotBlank({ maxLength: 10000 })),
    visibility: Type.Optional(Visibility),
    ...lifecycleUpdateProperties('projects'),
    ...extra,
  });
}


export type CreateBody = Static<ReturnType<typeof createBodySchema>> & Record<string, unknown>;
export type UpdateBody = Static<ReturnType<typeof updateBodySchema>> & Record<string, unknown>;
