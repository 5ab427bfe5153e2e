import { ACTIVITY_CATEGORIES, Nullable, OrganizationUserSchema, StringEnum, Timestamp, Type, Uuid } from '../../core/public.ts';

/** The spec's activity record, plus its category. */
export const ActivitySchema = Type.Object({
  id: Uuid(),
  eventType: Type.String({ description: 'Dotted name, e.g. study.status_changed' }),
  category: StringEnum(ACTIVITY_CATEGORIES),
  data: Type.Record(Type.String(), Type.Unknown(), { description: 'Shape depends on eventType (see the README)' }),
  date: Timestamp(),
  organizationId: Uuid(),
  projectId: Nullable(Uuid()),
  studyId: Nullable(Uuid()),
  assayId: Nullable(Uuid()),
  organizationUserId: Uuid({ description: 'Acting organization user' }),
  user: OrganizationUserSchema,
});

export const CategoryQuery = Type.Object({
  category: Type.Optional(
    Type.Array(Type.String(), {
      description: `Repeatable or comma-separated: ${ACTIVITY_CATEGORIES.join(', ')}. Omitted: every category the caller may see.`,
    }),
  ),
});
