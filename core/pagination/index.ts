import type { EntityManager } from '@mikro-orm/postgresql';
import { query, raw, sql, type Sql } from '../db/sql.ts';

/** The largest page a list read serves (the REST `size` limit, app/http/pages.ts). */
export const MAX_PAGE_SIZE = 200;

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
 * Runs `select <columns> <from>` for one page with its exact total, in one round trip (two when
 * the page is empty: then the total is read alone).
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
  // The total rides on every row: a subquery without outer references, computed once. The rows
  // keep the page's order (a scan of a subquery with a limit is never re-sorted); a CTE, a window
  // numbering and a join that also served an empty page cost the database 15–20 µs a page.
  const rows = await query<Row & { __total: string | number }>(
    em,
    sql`select page.*, ${q.after ? sql`${q.after}, ` : raw('')}${total} as __total from (${page}) page`,
  );
  if (!rows.length) return { rows: [], total: Number((await query<{ n: string | number }>(em, sql`select ${total} as n`))[0].n) };
  // `__total` stays on the rows (deleting it turns each row into a slow dictionary object);
  // responses are written from their schemas, which do not name it.
  return { rows: rows.length > req.size ? rows.slice(0, req.size) : rows, total: Number(rows[0].__total) };
}
