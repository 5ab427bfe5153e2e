import { ACTIVITY_CATEGORIES, schemas, tables, Type } from '../../core/public.ts';

/** The spec's activity record, plus its category. */
export const ActivitySchema = Type.Object({
  id: schemas.Uuid(),
  eventType: Type.String({ description: 'Dotted name, e.g. study.status_changed' }),
  category: schemas.StringEnum(ACTIVITY_CATEGORIES),
  data: Type.Record(Type.String(), Type.Unknown(), { description: 'Shape depends on eventType (docs/activity.md, "Event types")' }),
  date: schemas.Timestamp(),
  organizationId: schemas.Uuid(),
  projectId: schemas.Nullable(schemas.Uuid()),
  studyId: schemas.Nullable(schemas.Uuid()),
  assayId: schemas.Nullable(schemas.Uuid()),
  organizationUserId: schemas.Uuid({ description: 'Acting organization user' }),
  user: tables.OrganizationUserSchema,
});

export const CategoryQuery = Type.Object({
  category: Type.Optional(
    Type.Array(Type.String(), {
      description: `Repeatable or comma-separated: ${ACTIVITY_CATEGORIES.join(', ')}. Omitted: every category the caller may see.`,
    }),
  ),
});
