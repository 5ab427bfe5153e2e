import { Type, type TSchema } from '@sinclair/typebox';
import type { EntityManager } from '@mikro-orm/postgresql';
import { ValidationError } from '../errors.ts';
import { join, query, raw, sql, type Sql } from '../db/sql.ts';

export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 200;
export const MAX_TOOL_PAGE_SIZE = 100;

/** Sortable wire fields of a resource, each mapped to the SQL expression it sorts by. */
export interface SortSpec {
  fields: Record<string, string>;
  /** Applied when the caller gives no `sort`, e.g. `['createdAt,desc']`. */
  default: string[];
  /** Appended to every order so paging is stable; defaults to the first field's table `id`. */
  tiebreaker: string;
}

export interface SortOrder {
  property: string;
  direction: 'ASC' | 'DESC';
}

export interface PageRequest {
  page: number;
  size: number;
  offset: number;
  orders: SortOrder[];
  /** Whether the caller asked for the order (Spring's `sorted`). */
  sorted: boolean;
  orderBy: Sql;
}

export function pageQuerySchema(maxSize: number, spec: SortSpec) {
  return {
    page: Type.Optional(Type.Integer({ minimum: 0, default: 0, description: 'Zero-based page index' })),
    size: Type.Optional(
      Type.Integer({ minimum: 1, maximum: maxSize, default: DEFAULT_PAGE_SIZE, description: `Page size (at most ${maxSize}; a larger one is capped to ${maxSize})` }),
    ),
    sort: Type.Optional(
      Type.Array(Type.String(), {
        description: `\`field,direction\` (asc or desc); repeat for several fields. Fields: ${Object.keys(spec.fields).join(', ')}; default: ${spec.default.join(', then ')}`,
      }),
    ),
  };
}

export function toolPageSchema() {
  return {
    page: Type.Optional(Type.Integer({ minimum: 0, description: 'Zero-based page index (default 0)' })),
    size: Type.Optional(
      Type.Integer({ minimum: 1, maximum: MAX_TOOL_PAGE_SIZE, description: `Page size (default 20, at most ${MAX_TOOL_PAGE_SIZE})` }),
    ),
  };
}

export function parsePageRequest(
  input: { page?: number; size?: number; sort?: string[] },
  spec: SortSpec,
): PageRequest {
  const page = input.page ?? 0;
  const size = input.size ?? DEFAULT_PAGE_SIZE;
  const requested = input.sort ?? [];
  const orders = (requested.length ? requested : spec.default).map((value): SortOrder => {
    const [property, direction = 'asc', ...rest] = value.split(',').map((s) => s.trim());
    if (rest.length > 0 || !/^(asc|desc)$/i.test(direction)) {
      throw new ValidationError([{ field: 'sort', message: `"${value}" is not "field,asc" or "field,desc"` }]);
    }
    if (!Object.hasOwn(spec.fields, property)) {
      throw new ValidationError([
        { field: 'sort', message: `cannot sort by "${property}"; sortable fields: ${Object.keys(spec.fields).join(', ')}` },
      ]);
    }
    return { property, direction: direction.toUpperCase() === 'DESC' ? 'DESC' : 'ASC' };
  });
  const terms = orders.map((o) => raw(`${spec.fields[o.property]} ${o.direction}`));
  terms.push(raw(`${spec.tiebreaker} ASC`));
  const offset = page * size;
  if (!Number.isSafeInteger(offset)) throw new ValidationError([{ field: 'page', message: 'is too large' }]);
  return { page, size, offset, orders, sorted: requested.length > 0, orderBy: join(terms) };
}

/** Spring-style page envelope, as the spec names its fields. */
export function pageSchema<T extends TSchema>(item: T) {
  const sortState = Type.Object({ empty: Type.Boolean(), sorted: Type.Boolean(), unsorted: Type.Boolean() });
  return Type.Object({
    content: Type.Array(item),
    totalElements: Type.Integer(),
    totalPages: Type.Integer(),
    size: Type.Integer(),
    number: Type.Integer(),
    numberOfElements: Type.Integer(),
    first: Type.Boolean(),
    last: Type.Boolean(),
    empty: Type.Boolean(),
    sort: sortState,
    pageable: Type.Object({
      pageNumber: Type.Integer(),
      pageSize: Type.Integer(),
      sort: sortState,
      offset: Type.Integer(),
      paged: Type.Boolean(),
      unpaged: Type.Boolean(),
    }),
  });
}

export function pageEnvelope<T>(items: T[], total: number, req: PageRequest) {
  const totalPages = Math.ceil(total / req.size);
  const sort = { empty: !req.sorted, sorted: req.sorted, unsorted: !req.sorted };
  return {
    content: items,
    totalElements: total,
    totalPages,
    size: req.size,
    number: req.page,
    numberOfElements: items.length,
    first: req.page === 0,
    last: req.page >= totalPages - 1,
    empty: items.length === 0,
    sort,
    pageable: { pageNumber: req.page, pageSize: req.size, sort, offset: req.offset, paged: true, unpaged: false },
  };
}

/** The limits a page statement is written with: a size is served by the smallest one that holds it. */
const LIMIT_BUCKETS = [20, 50, 100, MAX_PAGE_SIZE];

/**
 * `limit N offset $n`. The service's statements run with generic plans (core/db/orm.ts), which
 * cannot see a parameter's value: with `limit $n` the planner assumed a tenth of the table and
 * hash-joined whole tables (an admin's list of 300,000 assays: 0.5 s instead of 5 ms). So the
 * limit is written into the statement, rounded up to one of four buckets (fetchPage keeps the
 * first `size` rows) so that a list has four statement texts, not one per size; the offset
 * stays a parameter (any page, one statement).
 */
function limit(req: PageRequest): Sql {
  const bucket = LIMIT_BUCKETS.find((b) => b >= req.size);
  if (!bucket || !Number.isSafeInteger(req.size) || req.size < 1) throw new Error(`page size ${req.size} is not between 1 and ${MAX_PAGE_SIZE}`);
  return sql`limit ${raw(String(bucket))} offset ${req.offset}`;
}

/**
 * Runs `select <columns> <from>` for one page with its exact total, in one round trip.
 * - `total`: an SQL expression giving the exact total without reading the rows (maintained
 *   counters, see core/counters) — the common lists use this, so a page costs O(page).
 * - otherwise `count(*)` of `from` beside the page (smaller lists: attachments, teams, notes,
 *   keywords, ...): it counts the matching rows without building them. (A window count over the
 *   page query built and sorted every matching row, content included, to return twenty: 0.4 s
 *   for 50,000 organization notes.)
 */
export async function fetchPage<Row>(
  em: EntityManager,
  q: {
    columns: Sql;
    from: Sql;
    total?: Sql;
    /** Further columns computed over the page's rows only (called `page`), never over the rows an offset skips: `(select … where x = page.id) as "n"`. */
    after?: Sql;
  },
  req: PageRequest,
): Promise<{ rows: Row[]; total: number }> {
  const page = sql`select ${q.columns} ${q.from} order by ${req.orderBy} ${limit(req)}`;
  const total = q.total ?? sql`(select count(*) ${q.from})`;
  // The total comes along even when the page is empty (left join on a one-row total).
  const rows = await query<Row & { __total: string | number; __rn: string | null }>(
    em,
    sql`with page as materialized (${page})
        select p.*, t.__total from (select ${total} as __total) t
        left join (select page.*, ${q.after ? sql`${q.after}, ` : raw('')}row_number() over () as __rn from page) p on true order by p.__rn`,
  );
  const n = Number(rows[0]?.__total ?? 0);
  const items = rows.filter((r) => r.__rn !== null).slice(0, req.size);
  for (const r of items) {
    delete (r as Partial<typeof r>).__rn;
    delete (r as Partial<typeof r>).__total;
  }
  return { rows: items, total: n };
}
