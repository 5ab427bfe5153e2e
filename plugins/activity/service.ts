import { ACTIVITY_CATEGORIES, type ActivityCategory, type Actor, counters, db, errors, fetchPage, type OperationContext, type PageRequest, raw, type Sql, sql, tables } from '../../core/public.ts';
import { projectVisibleTo, visibleChildTotal } from '../projects/extensions.ts';

// An entry's `user` is read beside the page (services.organizationUsers: cached by the server),
// not joined to every row.
export const columns = sql`a.id, a.event_type, a.category, a.data, a.date, a.organization_id, a.project_id, a.study_id, a.assay_id,
  a.organization_user_id`;

export interface ActivityRow {
  id: string;
  event_type: string;
  category: ActivityCategory;
  data: Record<string, unknown>;
  date: string;
  organization_id: string;
  project_id: string | null;
  study_id: string | null;
  assay_id: string | null;
  organization_user_id: string;
}

export type ActivityDto = ReturnType<typeof toDto>;

/** The entries of `rows` as the API shows them, each with its organization user (one look-up for the page). */
export async function toDtos(ctx: Pick<OperationContext, 'em' | 'services'>, rows: ActivityRow[]): Promise<ActivityDto[]> {
  const users = await ctx.services.organizationUsers.get(ctx.em, [...new Set(rows.map((r) => r.organization_user_id))]);
  return rows.map((r) => toDto(r, users.get(r.organization_user_id)!));
}

function toDto(r: ActivityRow, user: tables.OrganizationUserDto) {
  return {
    id: r.id,
    eventType: r.event_type,
    category: r.category,
    data: r.data,
    date: db.isoDate(r.date)!,
    organizationId: r.organization_id,
    projectId: r.project_id,
    studyId: r.study_id,
    assayId: r.assay_id,
    organizationUserId: r.organization_user_id,
    user,
  };
}

export const activitySort = { fields: { date: 'a.date' }, default: ['date,desc'], tiebreaker: 'a.id' };

/** `?category=A&category=B` and `?category=A,B` alike; unknown values are a 400. */
export function parseCategories(values: string[] | undefined): ActivityCategory[] | undefined {
  if (!values) return undefined;
  const list = values.flatMap((v) => v.split(',')).map((v) => v.trim()).filter(Boolean);
  const unknown = list.filter((v) => !(ACTIVITY_CATEGORIES as readonly string[]).includes(v));
  if (unknown.length) {
    throw new errors.ValidationError([{ field: 'category', message: `unknown category "${unknown[0]}"; one of ${ACTIVITY_CATEGORIES.join(', ')}` }]);
  }
  return list.length ? [...new Set(list)] as ActivityCategory[] : undefined;
}

/**
 * Which activity the actor sees (docs/activity.md, "Who sees which records"): admins everything of their
 * organization; others the records of projects they may view, and the organization-level
 * records (no project: teams, collections, keywords, ...) they performed themselves, since such
 * a record may name something private (a PRIVATE collection). Records of deleted projects are
 * visible to admins only. The project probe stays per row (`offset 0`): hashed, it would read
 * every visible project of the organization.
 */
function visible(ctx: OperationContext): Sql {
  const scope = sql`a.organization_id = ${ctx.actor.organizationId}`;
  if (ctx.actor.isAdmin) return scope;
  return sql`${scope} and ${entryViewable(ctx)}`;
}

/** A (non-admin) actor's condition on an entry of their organization: its project's, or their own without one. */
function entryViewable(ctx: OperationContext): Sql {
  return sql`((a.project_id is null and a.organization_user_id = ${ctx.actor.organizationUserId}) or ${projectViewable(ctx)})`;
}

/** The entry's project exists and the (non-admin) actor may view it. */
function projectViewable(ctx: OperationContext): Sql {
  return sql`exists (select 1 from project p where p.id = a.project_id and ${projectVisibleTo(ctx.services, ctx.actor, 'p')} offset 0)`;
}

export interface FeedFilter {
  projectId?: string;
  studyId?: string;
  assayId?: string;
  organizationUserId?: string;
  categories?: ActivityCategory[];
  /** A record feed's "may view the record" condition (lib/records `listUnder`). */
  guard?: { where: Sql; total: (total: Sql) => Sql };
}

/**
 * One feed page with its exact total. The total never counts rows: it sums the counters the
 * writing transactions keep (core/counters), over the classes and grants the caller sees.
 * A record's own feed (project, study, assay) needs no per-row visibility filter: the caller
 * was checked to view that record, and its rows (re-homed when a record moves) are judged by it,
 * except the old side of a move, which stays where the record was.
 */
export async function listActivity(ctx: OperationContext, filter: FeedFilter, page: PageRequest) {
  let { where, total } = feedConditions(ctx, filter);
  if (filter.guard) {
    where = sql`${filter.guard.where} and ${where}`;
    total = filter.guard.total(total);
  }
  const { rows, total: n } = await fetchPage<ActivityRow>(ctx.em, { columns, from: sql`from activity a where ${where}`, total }, page);
  return { items: await toDtos(ctx, rows), total: n };
}

interface FeedConditions {
  where: Sql;
  total: Sql;
}

/**
 * A feed's conditions, kept per caller: they are the same for every page a key reads, and a
 * member's are some forty fragments (about 30 µs, 7 % of the page's CPU, to build). Authentication hands
 * out one actor object per cached key (core/auth), so an entry lives as long as the key's cache
 * entry, and a change of the caller's roles or teams, which makes a new one, starts afresh.
 * Per kernel (its reference kinds are in them), a few per caller (a clear past that).
 */
const memo = new WeakMap<object, WeakMap<Actor, Map<string, FeedConditions>>>();
const CONDITIONS_PER_CALLER = 16;

function feedConditions(ctx: OperationContext, filter: FeedFilter): FeedConditions {
  const key = `${filter.projectId}|${filter.studyId}|${filter.assayId}|${filter.organizationUserId}|${filter.categories}`;
  let callers = memo.get(ctx.services);
  if (!callers) memo.set(ctx.services, (callers = new WeakMap()));
  let kept = callers.get(ctx.actor);
  const found = kept?.get(key);
  if (found) return found;
  const built = buildFeedConditions(ctx, filter);
  if (!kept) callers.set(ctx.actor, (kept = new Map()));
  if (kept.size >= CONDITIONS_PER_CALLER) kept.clear();
  kept.set(key, built);
  return built;
}

function buildFeedConditions(ctx: OperationContext, filter: FeedFilter): FeedConditions {
  const { actor, services } = ctx;
  const cats = filter.categories;
  // The scope's conditions that need no probe; the scope adds, for a non-admin outside a record's
  // own feed, each entry's visibility.
  const tenant = sql`a.organization_id = ${actor.organizationId}`;
  let plain: Sql;
  let total: Sql;
  const record = filter.assayId ? { column: 'assay_id', id: filter.assayId }
    : filter.studyId ? { column: 'study_id', id: filter.studyId }
    : filter.projectId ? { column: 'project_id', id: filter.projectId } : undefined;
  if (record) {
    plain = sql`${tenant} and a.${raw(record.column)} = ${record.id}`;
    total = counters.recordTotal(sql`${record.id}`, 'activity', cats);
  } else if (filter.organizationUserId) {
    const target = filter.organizationUserId;
    plain = sql`${tenant} and a.organization_user_id = ${target}`;
    // A non-admin's total adds the target's rows in the caller's PRIVATE projects, counted per
    // granted project (index only, activity_actor_project_idx): as an IN list, the generic plan
    // hash-joined the whole activity table.
    total = actor.isAdmin
      ? counters.classTotal(actor.organizationId, 'activity', { actorId: target, categories: cats })
      : sql`(${counters.classTotal(actor.organizationId, 'activity', { actorId: target, categories: cats, classes: target === actor.organizationUserId ? [...counters.OPEN_CLASSES, 'NONE'] : counters.OPEN_CLASSES })}
          + (select coalesce(sum((select count(*) from activity pa where pa.organization_user_id = ${target}
              and pa.project_id = g.id${cats ? sql` and pa.category in (${cats})` : raw('')})), 0)
               from (${services.permissions.privateProjects(actor)}) g (id)))`;
  } else {
    plain = tenant;
    total = actor.isAdmin
      ? counters.classTotal(actor.organizationId, 'activity', { categories: cats })
      : sql`(${visibleChildTotal(actor, 'activity', cats)}
          + ${counters.classTotal(actor.organizationId, 'activity', { classes: ['NONE'], categories: cats, actorId: actor.organizationUserId })})`;
  }
  if (cats) plain = sql`${plain} and a.category in (${cats})`;
  const scope = record || actor.isAdmin ? plain : sql`${plain} and ${entryViewable(ctx)}`;
  if (actor.isAdmin) return { where: scope, total };
  // Entries naming a further record the caller may not view (docs/activity.md, "Who sees which records"):
  // the counters count them, so the total takes them back, reading every entry of the scope that
  // names one (the partial index activity_ref_idx holds only those).
  let references = services.activity.referencesVisible(ctx, 'a');
  // A moved study's or assay's own feed also holds the old side of its move, which stays under
  // the old project: judged by that project, like in any other feed (the entry names another
  // record, so the partial index holds it and the total's correction below stays small).
  if (record && record.column !== 'project_id') references = sql`(${references} and (a.ref_kind is null or ${projectViewable(ctx)}))`;
  // The named record is checked first: most are visible, and then the entry's own visibility (a
  // probe of its project) is not needed. PostgreSQL orders the two probes as it likes in an AND;
  // a CASE keeps this order. Still one row per such entry of the organization (docs/performance.md).
  return {
    where: sql`${scope} and ${references}`,
    total: sql`(${total} - (select count(*) from activity a where ${plain} and a.ref_kind is not null
      and case when ${references} is not false then false else ${scope} end))`,
  };
}

/** SQL condition over `activity a`: a record GET /activity/{id} shows the actor (tenant scope included). */
export function shownTo(ctx: OperationContext): Sql {
  return sql`${visible(ctx)} and ${ctx.services.activity.referencesVisible(ctx, 'a')}`;
}

export async function getActivity(ctx: OperationContext, id: string) {
  const row = await db.queryOne<ActivityRow>(ctx.em, sql`select ${columns} from activity a where a.id = ${id} and ${shownTo(ctx)}`);
  if (!row) throw new errors.NotFoundError('Activity', id);
  return (await toDtos(ctx, [row]))[0];
}

/** 404 unless the organization user belongs to the caller's organization. */
export async function assertOrganizationUser(ctx: OperationContext, id: string): Promise<void> {
  const row = await db.queryOne(ctx.em, sql`select 1 from organization_user where id = ${id} and organization_id = ${ctx.actor.organizationId}`);
  if (!row) throw new errors.NotFoundError('OrganizationUser', id);
}
