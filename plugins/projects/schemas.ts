import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { NotBlank, StringEnum, Uuid, VISIBILITIES } from '../../core/public.ts';
import { lifecycleProperties } from '../../lib/records/index.ts';


const Visibility = StringEnum(VISIBILITIES, { description: 'Who may view the project' });

/** The project as both surfaces return it; contributed response fields are merged in. */
export function projectSchema(extra: Record<string, TSchema>) {
  return Type.Object({
      id: Uuid(),
      organizationId: Uuid(),
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
    code: NotBlank({ maxLength: 64 }),
    name: NotBlank({ maxLength: 255 }),
    description: NotBlank({ maxLength: 10000 }),
    visibility: Type.Optional(StringEnum(VISIBILITIES, { description: 'Who may view the project; defaults to PRIVATE' })),
    ...extra,
  });
}

/** PUT merges: omitted fields keep their value; present ones follow the create rules. */
export function updateBodySchema(extra: Record<string, TSchema>) {
  return Type.Object({
    code: Type.Optional(NotBlank({ maxLength: 64 })),
    name: Type.Optional(NotBlank({ maxLength: 255 })),
    description: Type.Optional(NotBlank({ maxLength: 10000 })),
    visibility: Type.Optional(Visibility),
    status: Type.Optional(Type.String({ description: 'Read-only here: change it with POST /projects/{id}/status' })),
    version: Type.Optional(Type.Integer({ description: 'When given, the update fails with 409 unless it is the current version' })),
    ...extra,
  });
}


export type CreateBody = Static<ReturnType<typeof createBodySchema>> & Record<string, unknown>;
export type UpdateBody = Static<ReturnType<typeof updateBodySchema>> & Record<string, unknown>;
