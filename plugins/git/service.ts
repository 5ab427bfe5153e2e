import crypto from 'node:crypto';
import { db, type EntityManager, errors, type OperationContext, raw, type Sql, sql, withStatus } from '../../core/public.ts';
import { lockedParent, parentType, type ParentAccess, type ParentKind } from '../../lib/records/index.ts';
import type { ProjectRecord } from '../projects/extensions.ts';
import { connect, type GitIntegration } from './connect.ts';
import { GitProviderError, isTransient, type GitProvider, type GitRepository } from './provider.ts';
import type { CreateRepositoryInput, DefaultGitGroupValue } from './schemas.ts';

/**
 * Finds a GIT integration the actor may use: 404 when there is none of that id in the
 * organization (or it was disconnected), 400 naming `field` when it is of another type.
 */
export type FindGitIntegration = (ctx: OperationContext, id: string, field: string) => Promise<GitIntegration>;

/** Tables of the records repositories are made for (the spec: studies and assays, never projects). */
const RECORD_TABLES: Record<string, string> = { study: 'study', assay: 'assay' };
export const REPOSITORY_KINDS = Object.keys(RECORD_TABLES);

const repositoryColumns = sql`r.id, r.parent_kind as "parentKind", r.parent_id as "parentId", r.integration_id as "integrationId",
  r.group_id as "groupId", r.name, r.external_id as "externalId", r.url, r.created_at as "createdAt"`;

interface RepositoryRow {
  id: string;
  parentKind: string;
  parentId: string;
  integrationId: string;
  groupId: string;
  name: string;
  externalId: string;
  url: string;
  createdAt: unknown;
}

function toDto(r: RepositoryRow) {
  return {
    id: r.id,
    parentType: parentType(r.parentKind),
    parentId: r.parentId,
    integrationId: r.integrationId,
    groupId: r.groupId,
    name: r.name,
    externalId: r.externalId,
    url: r.url,
    createdAt: db.isoDate(r.createdAt)!,
  };
}

export type RepositoryDto = ReturnType<typeof toDto>;

/** A provider failure as the caller sees it; `field` names the request field a missing group came from. */
export function providerHttpError(err: unknown, field = 'groupId'): unknown {
  if (!(err instanceof GitProviderError)) return err;
  switch (err.failure) {
    case 'GROUP_NOT_FOUND':
      return new errors.ValidationError([{ field, message: err.message }]);
    case 'MISCONFIGURED':
    case 'REJECTED':
      return new errors.ValidationError([{ field: field.replace(/groupId$/, 'integrationId'), message: err.message }]);
    case 'CONFLICT':
      return new errors.ConflictError(err.message);
    case 'TIMEOUT':
      return new errors.HttpError(504, err.message);
    default:
      return new errors.HttpError(502, err.message);
  }
}

/** `My Study: Ä/B 2` → `my-study-a-b-2`; the short id keeps names unique per record. */
export function repositoryName(recordName: string, recordId: string, fallback: string): string {
  const slug = recordName
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 60)
    .replace(/-+$/, '');
  return `${slug || fallback}-${recordId.slice(0, 8)}`;
}

export class GitService {
  readonly #findIntegration: FindGitIntegration;

  constructor(findIntegration: FindGitIntegration) {
    this.#findIntegration = findIntegration;
  }

  // --- the project field `defaultGitGroup` -------------------------------------------------

  /**
   * Validates and stores a project's default group (inside the project write's transaction).
   * Re-sending the stored value (e.g. a PUT of a GET body) is no change and is not checked
   * again: a default that stopped resolving never blocks a project update.
   */
  /** Stores (or clears) the default; false when it is the one stored already (no change to record). */
  async saveDefault(ctx: OperationContext, project: ProjectRecord, value: DefaultGitGroupValue | null): Promise<boolean> {
    if (value === null) {
      const deleted = await ctx.em.execute('delete from git_project_default where project_id = ? returning project_id', [project.id]);
      return deleted.length > 0;
    }
    const current = await this.#storedDefault(ctx.em, project.id);
    if (current && current.integrationId === value.integrationId && current.groupId === value.groupId) return false;
    const provider = await this.#provider(ctx, value.integrationId, 'defaultGitGroup.integrationId');
    let exists: boolean;
    try {
      exists = await provider.groupExists(value.groupId);
    } catch (err) {
      if (!isTransient(err)) throw providerHttpError(err, 'defaultGitGroup.groupId');
      // A provider that is down must not block a project write for a mere pre-selection: it is
      // stored unchecked, and ignored later should it not resolve.
      ctx.log.warn({ integrationId: value.integrationId, reason: (err as Error).message }, 'defaultGitGroup stored without checking the group');
      exists = true;
    }
    if (!exists) {
      throw new errors.ValidationError([{ field: 'defaultGitGroup.groupId', message: `Git group ${value.groupId} not found in integration ${value.integrationId}` }]);
    }
    await ctx.em.execute(
      `insert into git_project_default (project_id, organization_id, integration_id, group_id) values (?, ?, ?, ?)
       on conflict (project_id) do update set integration_id = excluded.integration_id, group_id = excluded.group_id, updated_at = now()`,
      [project.id, ctx.actor.organizationId, value.integrationId, value.groupId],
    );
    return true;
  }

  /** The `defaultGitGroup` response field of the project whose id is `id` (JSON or null), selected with it. */
  defaultJson(id: Sql): Sql {
    return sql`(select json_build_object('integrationId', d.integration_id, 'groupId', d.group_id) from git_project_default d where d.project_id = ${id})`;
  }

  async deleteDefaults(ctx: OperationContext, projectIds: string[]): Promise<void> {
    await ctx.em.execute('delete from git_project_default where project_id in (?)', [projectIds]);
  }

  // --- repositories of studies and assays ----------------------------------------------------

  async get(ctx: OperationContext, parent: ParentKind, id: string): Promise<RepositoryDto> {
    await parent.access(ctx, id);
    const row = await this.#repository(ctx, parent.kind, id);
    if (!row) throw new errors.NotFoundError(`Git repository of ${parent.label}`, id);
    return toDto(row);
  }

  /**
   * Creates the record's repository (201), or returns the one it already has (200). The vendor
   * call happens before anything is stored, outside any transaction: a failure stores nothing.
   * Creation looks the name up first, so a repeat after a crash between the vendor call and the
   * insert adopts the repository instead of making a second one.
   */
  async create(ctx: OperationContext, parent: ParentKind, id: string, body: CreateRepositoryInput) {
    const access = await parent.access(ctx, id);
    ctx.services.permissions.assertContributor(access);
    const existing = await this.#repository(ctx, parent.kind, id);
    if (existing) return withStatus(200, toDto(existing));

    const record = await db.queryOne<{ name: string }>(ctx.em, sql`select name from ${raw(RECORD_TABLES[parent.kind])} where id = ${id} and organization_id = ${ctx.actor.organizationId}`);
    if (!record) throw new errors.NotFoundError(parent.label, id);
    const name = body.name ?? repositoryName(record.name, id, parent.kind);
    const target = await this.#target(ctx, access, body);

    let repository: GitRepository | null;
    try {
      repository = await target.provider.findRepository(target.groupId, name);
      repository ??= await target.provider.createRepository(target.groupId, name, { description: `${parent.label} ${record.name}` });
    } catch (err) {
      throw providerHttpError(err, 'groupId');
    }

    const stored = await db.writeTransaction(ctx.em, async (em) => {
      // The record must be neither deleted (its cascade would miss this row) nor moved (its history
      // is re-homed) before the commit: pinned where it is now, contributor judged there.
      const tx = { ...ctx, em };
      const at = await lockedParent(tx, parent, id);
      const inserted = await db.queryOne<RepositoryRow>(
        em,
        sql`insert into git_repository as r (id, organization_id, parent_kind, parent_id, integration_id, group_id, name, external_id, url, created_by_id)
            values (${crypto.randomUUID()}, ${ctx.actor.organizationId}, ${parent.kind}, ${id}, ${target.integrationId}, ${target.groupId},
                    ${repository.name}, ${repository.id}, ${repository.url}, ${ctx.actor.organizationUserId})
            on conflict (parent_kind, parent_id) do nothing returning ${repositoryColumns}`,
      );
      // A concurrent request stored it first: theirs is the record's repository (read while the record is pinned).
      if (!inserted) return { row: (await this.#repository(tx, parent.kind, id))!, created: false };
      ctx.services.activity.record(em, ctx.actor, {
        eventType: 'git.repository_created',
        projectId: at.projectId,
        studyId: at.studyId,
        assayId: at.assayId,
        data: {
          repositoryId: inserted.id,
          parentType: parentType(parent.kind),
          parentId: id,
          integrationId: target.integrationId,
          groupId: target.groupId,
          name: repository.name,
          url: repository.url,
        },
      });
      return { row: inserted, created: true };
    });
    return withStatus(stored.created ? 201 : 200, toDto(stored.row));
  }

  /** Cascade: the records go, so do their repository rows (the repositories themselves stay). */
  async deleteOf(ctx: OperationContext, kind: string, ids: string[]): Promise<void> {
    await ctx.em.execute('delete from git_repository where parent_kind = ? and parent_id in (?)', [kind, ids]);
  }

  /**
   * Where to create: the body's integration and group (both, validated: 404/400), else the
   * project's default when it still resolves, else a 400 asking for a group.
   */
  async #target(ctx: OperationContext, access: ParentAccess, body: CreateRepositoryInput) {
    if (body.integrationId !== undefined || body.groupId !== undefined) {
      const missing = body.integrationId === undefined ? 'integrationId' : body.groupId === undefined ? 'groupId' : null;
      if (missing) throw new errors.ValidationError([{ field: missing, message: 'is required when integrationId or groupId is given' }]);
      const provider = await this.#provider(ctx, body.integrationId!, 'integrationId');
      return { provider, integrationId: body.integrationId!, groupId: body.groupId! };
    }
    const stored = await this.#storedDefault(ctx.em, access.projectId);
    if (stored) {
      const resolved = await this.#resolveDefault(ctx, stored);
      if (resolved) return resolved;
    }
    throw new errors.ValidationError(
      [
        { field: 'integrationId', message: 'is required: the project has no default Git group that resolves' },
        { field: 'groupId', message: 'is required: the project has no default Git group that resolves' },
      ],
      'No Git group given and the project has no default Git group that resolves',
    );
  }

  /**
   * The stored default if its integration is still there and usable and its group still exists;
   * otherwise null (ignored, never an error). A provider that cannot be reached is an error:
   * creating the repository there would fail the same way.
   */
  async #resolveDefault(ctx: OperationContext, stored: DefaultGitGroupValue) {
    let provider: GitProvider;
    try {
      provider = await this.#provider(ctx, stored.integrationId, 'integrationId');
    } catch (err) {
      if (err instanceof errors.HttpError && err.statusCode >= 400 && err.statusCode < 500) return null;
      throw err;
    }
    try {
      if (!(await provider.groupExists(stored.groupId))) return null;
    } catch (err) {
      throw providerHttpError(err);
    }
    return { provider, ...stored };
  }

  /** The provider of a GIT integration: 404 / 400 (wrong type, unusable settings) naming `field`. */
  async #provider(ctx: OperationContext, integrationId: string, field: string): Promise<GitProvider> {
    const integration = await this.#findIntegration(ctx, integrationId, field);
    try {
      return connect(integration);
    } catch (err) {
      throw err instanceof GitProviderError ? new errors.ValidationError([{ field, message: err.message }]) : err;
    }
  }

  async #storedDefault(em: EntityManager, projectId: string): Promise<DefaultGitGroupValue | undefined> {
    return db.queryOne<DefaultGitGroupValue>(
      em,
      sql`select integration_id as "integrationId", group_id as "groupId" from git_project_default where project_id = ${projectId}`,
    );
  }

  async #repository(ctx: OperationContext, kind: string, id: string): Promise<RepositoryRow | undefined> {
    return db.queryOne<RepositoryRow>(
      ctx.em,
      sql`select ${repositoryColumns} from git_repository r
            where r.organization_id = ${ctx.actor.organizationId} and r.parent_kind = ${kind} and r.parent_id = ${id}`,
    );
  }
}
