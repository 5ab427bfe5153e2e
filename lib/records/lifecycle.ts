import { db, defineWrite, errors, type OperationContext, p, raw, schemas, type Sql, type Static, type TSchema, Type, withArticle } from '../../core/public.ts';

/**
 * The lifecycle shared by the lifecycle record kinds (spec, "States"): provisioning moves a
 * record through INITIALIZING to ACTIVE or INITIALIZATION_FAILED; callers move it between the
 * working states with the status operation.
 */
export const LIFECYCLE_STATUSES = ['CREATED', 'INITIALIZING', 'INITIALIZATION_FAILED', 'ACTIVE', 'COMPLETE', 'ON_HOLD', 'DEACTIVATED'] as const;
export type LifecycleStatus = (typeof LIFECYCLE_STATUSES)[number];

const WORKING: LifecycleStatus[] = ['ACTIVE', 'ON_HOLD', 'COMPLETE', 'DEACTIVATED'];

/** Statuses a caller may set, by current status (docs/records.md, "Status transitions"). */
export const LIFECYCLE_TRANSITIONS: Record<LifecycleStatus, LifecycleStatus[]> = {
  CREATED: WORKING,
  ACTIVE: WORKING,
  ON_HOLD: WORKING,
  COMPLETE: WORKING,
  DEACTIVATED: WORKING,
  INITIALIZING: [],
  INITIALIZATION_FAILED: ['DEACTIVATED'],
};

export const StatusBody = Type.Object({ status: schemas.StringEnum(LIFECYCLE_STATUSES) });
export const ArchiveQuery = Type.Object({
  archived: Type.Optional(Type.Boolean({ default: true, description: 'true archives, false unarchives' })),
});

/**
 * Applies a caller's status change: undefined when it is already the status (nothing to do),
 * else the old status; an illegal change is a 400 naming both states. Records with their own
 * status set pass their own transition table.
 */
export function transition<S extends string = LifecycleStatus>(
  kind: string,
  record: { status: string },
  target: S,
  transitions: Record<string, readonly S[]> = LIFECYCLE_TRANSITIONS as Record<string, readonly string[]> as Record<string, readonly S[]>,
): S | undefined {
  const from = record.status as S;
  if (from === target) return undefined;
  if (!transitions[from]?.includes(target)) {
    throw new errors.BadRequestError(`${/^[aeiou]/i.test(kind) ? 'An' : 'A'} ${kind} cannot change status from ${from} to ${target}`);
  }
  record.status = target;
  return from;
}

/**
 * The shared PUT rules of lifecycle records: a stale `version` is a 409; fields
 * owned by another operation (`status`, a parent id) may be echoed back unchanged but not
 * changed here; the editable fields given are merged in. Returns the names of changed fields.
 */
export function mergeUpdate<E extends { version: number }>(
  kind: string,
  entity: E,
  body: Record<string, unknown>,
  editable: (keyof E & string)[],
  readOnly: Record<string, string>,
): string[] {
  if (body.version !== undefined && body.version !== entity.version) {
    throw new errors.VersionConflictError(`The ${kind} was changed by another request (version ${entity.version}, not ${String(body.version)})`);
  }
  for (const [field, operation] of Object.entries(readOnly)) {
    const current = (entity as Record<string, unknown>)[field];
    if (body[field] !== undefined && body[field] !== current) {
      throw new errors.ValidationError([{ field, message: `is changed only through ${operation}` }]);
    }
  }
  const changed: string[] = [];
  for (const field of editable) {
    const value = body[field];
    if (value === undefined) continue;
    const current = entity[field] as unknown;
    const same = value instanceof Date && current instanceof Date ? value.getTime() === current.getTime() : value === current;
    if (!same) {
      (entity as Record<string, unknown>)[field] = value;
      changed.push(field);
    }
  }
  return changed;
}

interface LifecycleWriteOptions<R extends TSchema> {
  /** Singular noun for docs and operationIds. */
  kind: string;
  /** Collection path, `/<plural>`. */
  base: string;
  tags: string[];
  response: R;
}

/** `POST {base}/:id/status` with body `{status}`: the only way to change a record's status. */
export function statusWrite<R extends TSchema>(opts: LifecycleWriteOptions<R>, run: (ctx: OperationContext, id: string, status: LifecycleStatus) => Promise<Static<R>>) {
  return defineWrite({
    method: 'POST',
    operationId: `set_${opts.kind}_status`,
    description: `Change the status of ${withArticle(opts.kind)} (allowed transitions: docs/records.md, "Status transitions"). Contributors only.`,
    path: `${opts.base}/:id/status`,
    tags: opts.tags,
    params: schemas.IdParams,
    body: StatusBody,
    status: 200,
    errors: [403],
    response: opts.response,
    run: (ctx, { params, body }) => run(ctx, params.id, body.status) as never,
  });
}

/** `POST {base}/:id/archive?archived=true|false`: archiving is a flag, not a status. */
export function archiveWrite<R extends TSchema>(opts: LifecycleWriteOptions<R>, run: (ctx: OperationContext, id: string, archived: boolean) => Promise<Static<R>>) {
  return defineWrite({
    method: 'POST',
    operationId: `archive_${opts.kind}`,
    description: `Archive (\`archived=true\`, the default) or unarchive ${withArticle(opts.kind)}. Contributors only.`,
    path: `${opts.base}/:id/archive`,
    tags: opts.tags,
    params: schemas.IdParams,
    query: ArchiveQuery,
    status: 200,
    errors: [403],
    response: opts.response,
    run: (ctx, { params, query }) => run(ctx, params.id, query.archived ?? true) as never,
  });
}

/** Columns every lifecycle record has, spread into its `defineEntity` properties. */
export function lifecycleEntityProperties() {
  return {
    status: p.string(),
    archived: p.boolean(),
    createdById: p.uuid(),
    createdAt: p.datetime().onCreate(db.creationTime),
    updatedAt: p.datetime().onCreate(db.creationTime).onUpdate(() => new Date()),
    version: p.integer().version(),
  };
}

/** Response properties every lifecycle record has. */
export function lifecycleProperties(kind: string) {
  return {
    status: schemas.StringEnum(LIFECYCLE_STATUSES, { description: 'Changed only through the status operation' }),
    archived: Type.Boolean({ description: 'Set through the archive operation' }),
    createdById: schemas.Uuid({ description: `Organization user who created the ${kind}` }),
    createdAt: schemas.Timestamp(),
    updatedAt: schemas.Timestamp(),
    version: Type.Integer({ description: 'Optimistic-lock version; send it back on update to detect concurrent changes' }),
  };
}

/** Update-body fields every lifecycle record accepts: its status, read-only there, and the version to check. */
export function lifecycleUpdateProperties(segment: string) {
  return {
    status: Type.Optional(Type.String({ description: `Read-only here: change it with POST /${segment}/{id}/status` })),
    version: Type.Optional(Type.Integer({ description: 'When given, the update fails with 409 unless it is the current version' })),
  };
}

/** Body fields of a record described by a code, a name, a description and a start date; all optional in an update. */
export function describedBodyProperties(update: boolean) {
  const fields = {
    code: Type.Optional(schemas.Nullable(schemas.NotBlank({ maxLength: 64, description: 'How the lab names the record (e.g. PPB-10001): unique among the organization\'s records of this kind, ignoring case; null removes it' }))),
    name: schemas.NotBlank({ maxLength: 255 }),
    description: Type.Optional(schemas.Nullable(Type.String({ maxLength: 10000 }))),
    startDate: Type.Optional(schemas.Nullable(schemas.DateInput())),
  };
  return update ? { ...fields, name: Type.Optional(fields.name) } : fields;
}

/** The lifecycle columns of table alias `a`, named as the entity properties. */
export function lifecycleColumns(a: string): Sql {
  return raw(`${a}.status, ${a}.archived, ${a}.created_by_id as "createdById", ${a}.created_at as "createdAt",
    ${a}.updated_at as "updatedAt", ${a}.version`);
}

export interface LifecycleShape {
  status: string;
  archived: boolean;
  createdById: string;
  createdAt: Date | string;
  updatedAt: Date | string;
  version: number;
}

/** The lifecycle part of a DTO, from an entity or a row selected with `lifecycleColumns`. */
export function lifecycleDto(r: LifecycleShape) {
  return {
    status: r.status as LifecycleStatus,
    archived: r.archived,
    createdById: r.createdById,
    createdAt: db.isoDate(r.createdAt)!,
    updatedAt: db.isoDate(r.updatedAt)!,
    version: r.version,
  };
}
