import { schemas, type Static, type TSchema, Type } from '../../core/public.ts';

const URL_RULE = 'An absolute http or https URL, e.g. https://example.org/page';

/** The link as both surfaces return it; `parent` is the kernel's `parentProperties` (parentType, parentId). */
export function externalLinkSchema(parent: Record<string, TSchema>) {
  return Type.Object({
    id: schemas.Uuid(),
    organizationId: schemas.Uuid(),
    ...parent,
    label: Type.String(),
    url: Type.String({ description: URL_RULE }),
    createdById: schemas.Uuid({ description: 'Organization user who created the link' }),
    createdAt: schemas.Timestamp(),
    updatedAt: schemas.Timestamp(),
    version: Type.Integer({ description: 'Optimistic-lock version; send it back on update to detect concurrent changes' }),
  }, { title: 'ExternalLink' });
}

const Label = () => schemas.NotBlank({ maxLength: 255 });
// The scheme and form are checked by the service (checkUrl), which names `url` in the 400.
const Url = () => Type.String({ maxLength: 2048, description: URL_RULE });

export const createBodySchema = Type.Object({ label: Label(), url: Url() });

/** PUT merges: omitted fields keep their value; present ones follow the create rules. */
export const updateBodySchema = Type.Object({
  label: Type.Optional(Label()),
  url: Type.Optional(Url()),
  version: Type.Optional(Type.Integer({ description: 'When given, the update fails with 409 unless it is the current version' })),
});

export type CreateBody = Static<typeof createBodySchema>;
export type UpdateBody = Static<typeof updateBodySchema>;
