import type { Static, TObject, TSchema } from '@sinclair/typebox';
import type { OperationContext } from './services.ts';
import type { PageRequest, SortSpec } from '../pagination/index.ts';

export type { OperationContext };

export interface PageResult<T> {
  items: T[];
  total: number;
}

// `{}` is the identity of `&`: an operation without params or query adds nothing to its input.
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
type Input<P, Q> = (P extends TObject ? Static<P> : {}) & (Q extends TObject ? Static<Q> : {});

interface ReadBase<P extends TObject | undefined, Q extends TObject | undefined, R extends TSchema> {
  /** The MCP tool name and the OpenAPI operationId (snake_case). */
  name: string;
  /** A short title for the API documentation; default: the name in words (`list_projects` → "List projects"). */
  summary?: string;
  description: string;
  /** REST path under /api/v1, Fastify syntax (`/projects/:id`). */
  path: string;
  params?: P;
  query?: Q;
  /** Item schema; for paged reads the kernel wraps it in the page envelope. */
  response: R;
  /** Expose as an MCP tool (default true). */
  tool?: boolean;
  /**
   * The tool's own parameters, in place of the path's and the query's: a look-up tool takes a
   * single `id` (spec, "Agent tool endpoint", rule 2) where the REST path also names the parent;
   * the `search` tool calls `q` `query`. Parameters left out are undefined in a tool call.
   */
  toolParams?: TObject;
  tags?: string[];
}

export interface ItemRead<P extends TObject | undefined = any, Q extends TObject | undefined = any, R extends TSchema = TSchema>
  extends ReadBase<P, Q, R> {
  paged?: undefined;
  run(ctx: OperationContext, input: Input<P, Q>): Promise<Static<R>>;
}

export interface PagedRead<P extends TObject | undefined = any, Q extends TObject | undefined = any, R extends TSchema = TSchema>
  extends ReadBase<P, Q, R> {
  paged: { sort: SortSpec; maxSize?: number };
  run(ctx: OperationContext, input: Input<P, Q>, page: PageRequest): Promise<PageResult<Static<R>>>;
}

/** One read operation: a REST GET and (by default) an MCP tool, from one definition. */
export type ReadDefinition = ItemRead | PagedRead;

export function defineRead<P extends TObject | undefined, Q extends TObject | undefined, R extends TSchema>(
  def: ItemRead<P, Q, R>,
): ItemRead<P, Q, R>;
export function defineRead<P extends TObject | undefined, Q extends TObject | undefined, R extends TSchema>(
  def: PagedRead<P, Q, R>,
): PagedRead<P, Q, R>;
export function defineRead(def: ReadDefinition): ReadDefinition {
  return def;
}

type WriteInput<P, Q, B> = {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type
  params: P extends TObject ? Static<P> : {};
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type
  query: Q extends TObject ? Static<Q> : {};
  body: B extends TSchema ? Static<B> : undefined;
};

export type WriteErrorStatus = 403 | 409;

/** A REST write (writes never become MCP tools: the agent endpoint is read-only). */
export interface WriteDefinition<
  P extends TObject | undefined = any,
  Q extends TObject | undefined = any,
  B extends TSchema | undefined = any,
  R extends TSchema | undefined = any,
> {
  method: 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  operationId: string;
  /** A short title for the API documentation; default: the operationId in words. */
  summary?: string;
  description: string;
  path: string;
  params?: P;
  query?: Q;
  body?: B;
  /** 200 or 201 with `response`, or 204 without a body. */
  status: 200 | 201 | 204;
  /**
   * A second success status with the same `response` (documented too), answered when `run`
   * returns `withStatus(alternativeStatus, body)`: e.g. 201 on creation, 200 for an idempotent repeat.
   */
  alternativeStatus?: 200 | 201;
  response?: R;
  tags?: string[];
  /**
   * Client errors this write answers besides 400, 401 and the 404 of a path id, for the API
   * documentation: 403 when only contributors, owners or admins may make it, 409 when it can hit a
   * unique value (a `version` in the body documents the stale-version 409 by itself).
   */
  errors?: readonly WriteErrorStatus[];
  callbacks?: Record<string, unknown>; // OpenAPI `callbacks`: requests the service sends because of this one (webhooks)
  /** Runs on the raw body before schema validation (e.g. to name a field no enabled plugin fills). */
  preValidate?(body: unknown): void;
  run(ctx: OperationContext, input: WriteInput<P, Q, B>): Promise<R extends TSchema ? Static<R> | StatusResult<Static<R>> : void>;
}

/** A write's result answered with its definition's `alternativeStatus` instead of `status`. */
export class StatusResult<T> {
  readonly status: 200 | 201;
  readonly body: T;
  constructor(status: 200 | 201, body: T) {
    this.status = status;
    this.body = body;
  }
}

export const withStatus = <T>(status: 200 | 201, body: T) => new StatusResult(status, body);

export function defineWrite<
  P extends TObject | undefined,
  Q extends TObject | undefined,
  B extends TSchema | undefined,
  R extends TSchema | undefined,
>(def: WriteDefinition<P, Q, B, R>): WriteDefinition<P, Q, B, R> {
  return def;
}
