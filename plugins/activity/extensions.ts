/**
 * What other plugins may use of the activity feed (the webhooks plugin delivers and feeds the
 * records exactly as GET /api/v1/activity shows them): the record's schema, how to select and
 * map it, and the condition deciding whom it shows to.
 */
export { ActivitySchema } from './schemas.ts';
export {
  /** Select list over `activity a`, for `toActivityDtos`. */
  columns as activityColumns,
  /** Selected rows as the REST and MCP surfaces show them (their organization users read beside them). */
  toDtos as toActivityDtos,
  type ActivityDto,
  /** SQL condition over `activity a`: the record shows to the context's actor (tenant scope, visibility, named records). */
  shownTo as activityShownTo,
  type ActivityRow,
} from './service.ts';
