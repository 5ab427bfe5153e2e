import { parentKinds } from '../../lib/records/index.ts';
import { type BootstrapSection, errors, schemas } from '../../core/public.ts';
import { NoteService, ORGANIZATION, type NoteParent } from './service.ts';

/** The keys a `parent` may have (contract, "Bootstrap file"): exactly one of them. */
const PARENT_KEYS: Record<string, string> = { organization: ORGANIZATION, projectId: 'project', studyId: 'study', assayId: 'assay' };
const UuidValue = schemas.Uuid();

/**
 * The bootstrap file's `notes` section: `{ref, parent, type, format, content, archived?}` per
 * item, `parent` one of `{"organization": REF-or-id}`, `{"projectId": UUID}`, `{"studyId": UUID}`,
 * `{"assayId": UUID}` (records made earlier through the API; their organization is the note's).
 * Any bad item fails the whole file with one line naming the item.
 */
export const notesSection: BootstrapSection = async (ctx, items) => {
  const service = new NoteService(ctx.services);
  const out: Record<string, { id: string }> = {};
  for (const [i, item] of items.entries()) {
    const where = ctx.label('notes', item, i);
    const { parent, organizationId } = await resolveParent(ctx, service, item.parent, where);
    const note = await service
      .create(ctx.em, {
        organizationId,
        parent,
        type: item.type as string,
        format: item.format as string,
        content: item.content as string,
        archived: item.archived as boolean | undefined,
      })
      .catch((e: unknown) => {
        if (e instanceof errors.ValidationError && e.errors.length) throw new errors.BootstrapError(`${where}: ${e.errors.map((f) => `${f.field} ${f.message}`).join('; ')}`);
        if (e instanceof errors.HttpError) throw new errors.BootstrapError(`${where}: ${e.message}`);
        throw e;
      });
    if (typeof item.ref === 'string') out[item.ref] = { id: note.id };
  }
  return out;
};

async function resolveParent(
  ctx: Parameters<BootstrapSection>[0],
  service: NoteService,
  value: unknown,
  where: string,
): Promise<{ parent: NoteParent; organizationId: string }> {
  const shape = `parent must be one of {"organization": REF}, {"projectId": UUID}, {"studyId": UUID}, {"assayId": UUID}`;
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw new errors.BootstrapError(`${where}: ${shape}`);
  const entries = Object.entries(value);
  if (entries.length !== 1 || !(entries[0][0] in PARENT_KEYS)) throw new errors.BootstrapError(`${where}: ${shape}`);
  const [key, id] = entries[0];
  const kind = PARENT_KEYS[key];
  if (kind === ORGANIZATION) {
    const organizationId = await ctx.organization(id, where);
    return { parent: { kind, id: organizationId }, organizationId };
  }
  if (schemas.validateInput(UuidValue, id).length) throw new errors.BootstrapError(`${where}: parent ${key} must be a UUID`);
  if (!parentKinds(ctx.services).get(kind)) throw new errors.BootstrapError(`${where}: parent ${key}: no enabled plugin provides ${kind} records`);
  const parent = { kind, id: (id as string).toLowerCase() };
  const organizationId = await service.organizationOf(ctx.em, parent);
  if (!organizationId) throw new errors.BootstrapError(`${where}: unknown ${kind} "${String(id)}"`);
  return { parent, organizationId };
}
