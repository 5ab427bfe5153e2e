import { type BootstrapSection, errors, schemas } from '../../core/public.ts';
import { CreateBody } from './schemas.ts';
import { insertAssayType } from './service.ts';

/**
 * The bootstrap file's `assayTypes` section: `{ref, organization, name, description?, status?,
 * fields?, tasks?}` per item, checked with the same rules as POST /assay-types. Any bad item
 * fails the whole file with one line naming the item and the field.
 */
export const assayTypesSection: BootstrapSection = async (ctx, items) => {
  const out: Record<string, { id: string }> = {};
  for (const [i, item] of items.entries()) {
    const where = ctx.label('assayTypes', item, i);
    const organizationId = await ctx.organization(item.organization, where);
    const { ref: _ref, organization: _organization, ...body } = item;
    const problems = schemas.validateInput(CreateBody, body);
    if (problems.length) throw new errors.BootstrapError(`${where}: ${problems.map((e) => `${e.field} ${e.message}`).join('; ')}`);
    const type = await insertAssayType(ctx.em, organizationId, null, body as CreateBody).catch((e: unknown) => {
      if (e instanceof errors.ValidationError && e.errors.length) throw new errors.BootstrapError(`${where}: ${e.errors.map((f) => `${f.field} ${f.message}`).join('; ')}`);
      if (e instanceof errors.HttpError) throw new errors.BootstrapError(`${where}: ${e.message}`);
      throw e;
    });
    if (typeof item.ref === 'string') out[item.ref] = { id: type.id };
  }
  return out;
};
