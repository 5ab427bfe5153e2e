import crypto from 'node:crypto';
import { type Actor, db, type EntityManager, errors, fetchPage, type KernelServices, type OperationContext, type PageRequest, raw, type Sql, sql, withArticle } from '../../core/public.ts';
import { lockedParent, attachedColumns, attachedDto, attachedTo, attachedVisible, parentOf, parentParam, type AttachedRow, type ParentAccess, type ParentKind, parentKinds } from '../../lib/records/index.ts';
import { Note, NoteVersion } from './entities.ts';
import { NOTE_FORMATS, NOTE_TYPES, type NoteFormat, type NoteType } from './schemas.ts';

/** The parent kind of organization notes (`parent_id` is the organization's id). */
export const ORGANIZATION = 'organization';

/** What a note is attached to: the organization, or a registered parent kind (`project`, ...) and its id. */
export interface NoteParent {
  kind: string;
  id: string;
}

export interface NewNote {
  organizationId: string;
  parent: NoteParent;
  type: string;
  format: string;
  content: string;
  archived?: boolean;
  /** Recorded as the creator; provisioned notes have none. */
  actor?: Actor;
}

export interface NoteEdit {
  content?: string;
  format?: string;
  type?: string;
  archived?: boolean;
}

interface NoteShape extends AttachedRow {
  type: string;
  format: string;
  content: string;
  version: number;
  createdById?: string | null;
  createdAt: Date | string;
  updatedAt: Date | string;
}

function toDto(n: NoteShape) {
  return {
    ...attachedDto(n),
    type: n.type as NoteType,
    format: n.format as NoteFormat,
    content: n.content,
    version: n.version,
    createdById: n.createdById ?? null,
    createdAt: db.isoDate(n.createdAt)!,
    updatedAt: db.isoDate(n.updatedAt)!,
  };
}

export type NoteDto = ReturnType<typeof toDto>;

/** Only the current version's content is read; archived notes are never returned. */
const columns = sql`${attachedColumns('n')},
  n.type, n.format, v.content, n.current_version as version, n.created_by_id as "createdById", n.created_at as "createdAt",
  n.updated_at as "updatedAt"`;
const current = raw('note n join note_version v on v.note_id = n.id and v.version = n.current_version');

export const noteSort = {
  fields: { createdAt: 'n.created_at', updatedAt: 'n.updated_at', type: 'n.type' },
  default: ['createdAt,desc'],
  tiebreaker: 'n.id',
};

function oneOf(values: readonly string[]) {
  return `must be one of ${values.join(', ')}`;
}

/** The rules of a note's fields, for a new note (`creating`) or the fields an edit gives. */
function checkFields(input: NoteEdit, creating: boolean): void {
  const problems: errors.FieldError[] = [];
  const check = (field: keyof NoteEdit, ok: (v: unknown) => boolean, message: string) => {
    const value = input[field];
    if (value === undefined) {
      if (creating && field !== 'archived') problems.push({ field, message: 'is required' });
    } else if (!ok(value)) problems.push({ field, message });
  };
  check('type', (v) => (NOTE_TYPES as readonly unknown[]).includes(v), oneOf(NOTE_TYPES));
  check('format', (v) => (NOTE_FORMATS as readonly unknown[]).includes(v), oneOf(NOTE_FORMATS));
  check('content', (v) => typeof v === 'string', 'must be a string');
  check('archived', (v) => typeof v === 'boolean', 'must be a boolean');
  if (problems.length) throw new errors.ValidationError(problems);
}

/**
 * Notes: read through the public API (organization notes and notes of every registered parent
 * kind), written only through `create` and `edit` (offered as the `notes.service` extension
 * point; the bootstrap file's `notes` section uses `create`). Content is versioned: an edit of
 * the content adds a version, and only the current one is ever read.
 */
export class NoteService {
  readonly #services: KernelServices;

  constructor(services: KernelServices) {
    this.#services = services;
  }

  // ---- reads ---------------------------------------------------------------------------------

  /** Organization notes: every member of the organization sees them. */
  listOfOrganization(ctx: OperationContext, page: PageRequest) {
    return this.#page(ctx, this.#organizationScope(ctx), page);
  }

  getOfOrganization(ctx: OperationContext, id: string): Promise<NoteDto> {
    return this.#one(ctx, id, this.#organizationScope(ctx));
  }

  /** Notes of one project/study/assay: 404 naming the parent when the actor may not view it. */
  async listOf(ctx: OperationContext, parent: ParentKind, params: Record<string, unknown>, page: PageRequest) {
    return this.#page(ctx, attachedTo('n', await parentOf(ctx, parent, params)), page);
  }

  /**
   * A note of one project/study/assay. The REST path names the parent (a note of another one is
   * a 404); the look-up tool gives the note's id alone, so then any parent of this kind that the
   * actor may view will do (computed from the current parent, so a moved study takes its notes).
   */
  async getOf(ctx: OperationContext, parent: ParentKind, params: Record<string, unknown>, id: string): Promise<NoteDto> {
    const scope =
      params[parentParam(parent)] === undefined
        ? sql`n.parent_kind = ${parent.kind} and ${attachedVisible(ctx, 'n')}`
        : attachedTo('n', await parentOf(ctx, parent, params));
    return this.#one(ctx, id, scope);
  }

  #organizationScope(ctx: OperationContext): Sql {
    return sql`n.parent_kind = ${ORGANIZATION} and n.parent_id = ${ctx.actor.organizationId}`;
  }

  async #page(ctx: OperationContext, scope: Sql, page: PageRequest) {
    const live = sql`n.organization_id = ${ctx.actor.organizationId} and not n.archived and ${scope}`;
    const from = sql`from ${current} where ${live}`;
    // Counted without the version join (one current version per note), index only (note_live_idx).
    const count = sql`(select count(*) from note n where ${live})`;
    const { rows, total } = await fetchPage<NoteShape>(ctx.em, { columns, from, total: count }, page);
    return { items: rows.map(toDto), total };
  }

  async #one(ctx: OperationContext, id: string, scope: Sql): Promise<NoteDto> {
    const row = await db.queryOne<NoteShape>(
      ctx.em,
      sql`select ${columns} from ${current} where n.id = ${id} and n.organization_id = ${ctx.actor.organizationId} and not n.archived and ${scope}`,
    );
    if (!row) throw new errors.NotFoundError('Note', id);
    return toDto(row);
  }

  // ---- writes --------------------------------------------------------------------------------

  /**
   * The organization a note parent belongs to, or undefined when there is no such parent (or its
   * kind is not enabled). A record's organization never changes, a move included, so its own
   * row says it. In a transaction the row stays locked (shared) until the commit: the record's
   * delete then waits and takes the new note along, instead of leaving it behind.
   */
  async organizationOf(em: EntityManager, parent: NoteParent): Promise<string | undefined> {
    const kind = parentKinds(this.#services).get(parent.kind);
    if (parent.kind === ORGANIZATION || !kind) {
      if (parent.kind !== ORGANIZATION) return undefined;
      const row = await db.queryOne<{ id: string }>(em, sql`select o.id from organization o where o.id = ${parent.id}`);
      return row?.id;
    }
    const row = await db.queryOne<{ organizationId: string }>(em, sql`select r.organization_id as "organizationId" from ${raw(kind.table)} r where r.id = ${parent.id} for share`);
    return row?.organizationId;
  }

  /**
   * Provisions a note with its first version (no permission check: the caller is the operator
   * or trusted code). The parent must exist in `organizationId`; `actor` is recorded as the
   * creator. Runs in the caller's EntityManager (flushed here), so it joins its transaction.
   */
  async create(em: EntityManager, input: NewNote): Promise<NoteDto> {
    checkFields(input, true);
    const kind = parentKinds(this.#services).get(input.parent.kind);
    if (input.parent.kind !== ORGANIZATION && !kind) {
      throw new errors.ValidationError([{ field: 'parent', message: `notes cannot be attached to ${withArticle(input.parent.kind)} (no enabled plugin provides that kind)` }]);
    }
    if ((await this.organizationOf(em, input.parent)) !== input.organizationId) {
      throw new errors.NotFoundError(kind?.label ?? 'Organization', input.parent.id);
    }
    if (input.actor && input.actor.organizationId !== input.organizationId) {
      throw new errors.ValidationError([{ field: 'actor', message: 'must be a member of the note\'s organization' }]);
    }
    const id = crypto.randomUUID();
    const createdById = input.actor?.organizationUserId ?? null;
    const note = em.create(Note, {
      id,
      organizationId: input.organizationId,
      parentKind: input.parent.kind,
      parentId: input.parent.id,
      type: input.type,
      format: input.format,
      archived: input.archived ?? false,
      createdById,
      currentVersion: 1,
    });
    em.create(NoteVersion, { noteId: id, version: 1, organizationId: input.organizationId, content: input.content, createdById });
    await em.flush();
    return toDto({ ...note, content: input.content, version: 1 });
  }

  /**
   * Edits a note as `ctx.actor`: a new content adds a version (the exposed content is the
   * latest); type, format and archived change the note itself. Whoever may contribute to the
   * parent may edit (any member for organization notes); a note whose parent the actor may not
   * view is a 404, a viewer without contribute permission gets a 403. A change records
   * `note.updated` with the editing actor; an edit that changes nothing records nothing.
   */
  async edit(ctx: OperationContext, noteId: string, changes: NoteEdit): Promise<NoteDto> {
    return db.writeTransaction(ctx.em, async (em) => {
      const org = ctx.actor.organizationId;
      const at = await db.queryOne<{ parentKind: string; parentId: string }>(
        em,
        sql`select parent_kind as "parentKind", parent_id as "parentId" from note where id = ${noteId} and organization_id = ${org}`,
      );
      if (!at) throw new errors.NotFoundError('Note', noteId);
      const access = await this.#accessForEdit({ ...ctx, em }, { id: noteId, ...at });
      // Then the note itself (after its parent, the kernel's order): edits of it run one after
      // another, each adding its version on top of the one before. Gone meanwhile: the parent's cascade.
      await db.query(em, sql`select id from note where id = ${noteId} for update`);
      const note = await em.findOne(Note, { id: noteId, organizationId: org });
      if (!note) throw new errors.NotFoundError('Note', noteId);
      checkFields(changes, false);
      const latest = await em.findOneOrFail(NoteVersion, { noteId, version: note.currentVersion });
      const fields: string[] = [];
      for (const field of ['type', 'format', 'archived'] as const) {
        const value = changes[field];
        if (value === undefined || value === note[field]) continue;
        (note as Record<string, unknown>)[field] = value;
        fields.push(field);
      }
      let content = latest.content;
      if (changes.content !== undefined && changes.content !== latest.content) {
        note.currentVersion += 1;
        content = changes.content;
        em.create(NoteVersion, {
          noteId,
          version: note.currentVersion,
          organizationId: note.organizationId,
          content,
          createdById: ctx.actor.organizationUserId,
        });
        fields.push('content');
      }
      if (fields.length) {
        note.updatedAt = new Date();
        ctx.services.activity.record(em, ctx.actor, {
          eventType: 'note.updated',
          projectId: access?.projectId,
          studyId: access?.studyId,
          assayId: access?.assayId,
          data: { noteId, version: note.currentVersion, fields },
        });
      }
      return toDto({ ...note, content, version: note.currentVersion });
    });
  }

  /**
   * The parent as the actor may change it, pinned until the commit (neither deleted nor moved, so
   * its cascade or its move sees this edit and its entry); null for organization notes (any member may).
   */
  async #accessForEdit(ctx: OperationContext, note: { id: string; parentKind: string; parentId: string }): Promise<ParentAccess | null> {
    if (note.parentKind === ORGANIZATION) return null;
    // The note is as invisible as its parent: the 404 names the note, not the parent.
    const notFound = () => new errors.NotFoundError('Note', note.id);
    const kind = parentKinds(this.#services).get(note.parentKind);
    if (!kind) throw notFound();
    return lockedParent(ctx, kind, note.parentId).catch((e: unknown) => {
      throw e instanceof errors.NotFoundError ? notFound() : e;
    });
  }
}
