import { db, type OperationContext, raw, sql } from '../../core/public.ts';
import { activityColumns, activityShownTo, type ActivityDto, type ActivityRow, toActivityDtos } from '../activity/extensions.ts';
import type { ChangeWatcher } from './watcher.ts';

/**
 * Log entries one request looks at, whatever it finds visible: a caller who sees few of their
 * organization's records still pays O(this) per request, and moves on (`nextCursor` past what
 * was looked at, `hasMore`) instead of scanning the organization's whole history.
 */
const SCAN = 2000;

export interface ChangesInput {
  after?: string;
  size?: number;
  wait?: number;
}

interface Page {
  items: ActivityDto[];
  nextCursor: string;
  hasMore: boolean;
}

/**
 * GET /activity/changes: the activity the caller may see (the same rule as GET /activity), in
 * the order the changes committed (the position the sequencer gave, pipeline.ts), after the
 * cursor. With `wait`, an empty answer is held until a change of the caller's organization is
 * sequenced (watcher.ts), the client goes away, the server stops, or `wait` seconds pass.
 */
export async function changes(ctx: OperationContext, watcher: ChangeWatcher, input: ChangesInput): Promise<Page> {
  const size = input.size ?? 100;
  const deadline = Date.now() + (input.wait ?? 0) * 1000;
  let page = await read(ctx, input.after ?? '0', size);
  while (!page.items.length && !page.hasMore && Date.now() < deadline && !ctx.signal?.aborted) {
    const waiting = watcher.subscribe(ctx.em, ctx.actor.organizationId, Number(page.nextCursor));
    try {
      // Subscribed first, then read again: nothing that commits in between can slip by.
      await waiting.ready;
      page = await read(ctx, page.nextCursor, size);
      if (page.items.length || page.hasMore) break;
      if (!(await waiting.next(deadline - Date.now(), ctx.signal))) break;
    } finally {
      waiting.close();
    }
    page = await read(ctx, page.nextCursor, size);
  }
  return page;
}

async function read(ctx: OperationContext, after: string, size: number): Promise<Page> {
  const rows = await db.query<ActivityRow & { position: string | null; last: string | null; scanned: string }>(
    ctx.em,
    sql`with scanned as materialized (
          select position, activity_id from webhook_change where organization_id = ${ctx.actor.organizationId} and position > ${after}::bigint
           order by position limit ${raw(String(SCAN))}),
        edge as (select max(position) as last, count(*) as scanned from scanned)
        select e.last, e.scanned, h.* from edge e left join lateral (
          select s.position, ${activityColumns} from scanned s join activity a on a.id = s.activity_id
           where ${activityShownTo(ctx)} order by s.position limit ${size + 1}) h on true
        order by h.position`,
  );
  const hits = rows.filter((r) => r.position !== null);
  if (hits.length > size) {
    const items = hits.slice(0, size);
    return { items: await toActivityDtos(ctx, items), nextCursor: items[size - 1].position!, hasMore: true };
  }
  const { last, scanned } = rows[0];
  return { items: await toActivityDtos(ctx, hits), nextCursor: last ?? after, hasMore: Number(scanned) === SCAN };
}
