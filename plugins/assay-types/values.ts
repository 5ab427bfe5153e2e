import { errors, schemas } from '../../core/public.ts';

export type Values = Record<string, unknown>;

/** What a check reads of a field (plugins/assay-types/extensions.ts `AssayFieldDefinition`, without importing it back). */
interface Field {
  name: string;
  type: string;
  required: boolean;
  options: string[] | null;
  defaultValue?: unknown;
}

const DATE = new RegExp(schemas.DateInput().pattern!);
const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;
const FILE_KEYS = ['name', 'path', 'url'];

/** The stored form of one value, or the message saying why it does not fit the field. */
export function checkFieldValue(field: Pick<Field, 'type' | 'options'>, value: unknown): { value: unknown } | { message: string } {
  switch (field.type) {
    case 'TEXT':
    case 'LONG_TEXT':
      return typeof value === 'string' ? { value } : { message: 'must be a string' };
    case 'NUMBER':
      return typeof value === 'number' && Number.isFinite(value) ? { value } : { message: 'must be a number' };
    case 'INTEGER':
      return Number.isSafeInteger(value) ? { value } : { message: 'must be an integer' };
    case 'BOOLEAN':
      return typeof value === 'boolean' ? { value } : { message: 'must be a boolean' };
    case 'DATE': {
      const message = 'must be a date (YYYY-MM-DD or an ISO 8601 date-time with offset)';
      if (typeof value !== 'string' || !DATE.test(value)) return { message };
      try {
        // A date stays a date; a date-time is stored in UTC, as every timestamp of the API.
        const date = schemas.parseDateInput('value', value)!;
        return { value: DATE_ONLY.test(value) ? value : date.toISOString() };
      } catch {
        return { message };
      }
    }
    case 'CHOICE':
      return typeof value === 'string' && field.options!.includes(value) ? { value } : { message: `must be one of: ${field.options!.join(', ')}` };
    case 'FILE': {
      // Where the file is kept (a path or URL), or what the source system says of it.
      const message = 'must be a file reference: a non-blank string (path or URL), or an object of name, path and url strings';
      if (typeof value === 'string') return value.trim() ? { value } : { message };
      if (!value || typeof value !== 'object' || Array.isArray(value)) return { message };
      const entries = Object.entries(value);
      const ok = entries.length > 0 && entries.every(([k, v]) => FILE_KEYS.includes(k) && typeof v === 'string');
      return ok ? { value } : { message };
    }
    default:
      return { message: `has a field of unknown type ${field.type}` };
  }
}

/**
 * Checks values against fields (an assay's against its type's, a task's against its form); a
 * failure is a 400 naming each `<prefix>.<field>`. On create (`current` undefined) every
 * required field needs a value, and a field with a default that is given none gets its default.
 * On update the given values are merged into the current ones (null removes a value) and the
 * result is checked again; fields made required after the record was created are not enforced
 * then (they apply to new records), but a required value cannot be removed.
 */
export function validateValues(owner: { name: string; fields: Field[] }, input: Values, current?: Values, opts: { prefix?: string; of?: string } = {}): Values {
  const prefix = opts.prefix ?? 'values';
  const byName = new Map(owner.fields.map((f) => [f.name, f]));
  const problems: errors.FieldError[] = [];
  // A Map, not an object: a name such as "__proto__" must be refused like any unknown name.
  const merged = new Map(Object.entries(current ?? {}));
  for (const [name, value] of Object.entries(input)) {
    if (value !== null) merged.set(name, value);
    else {
      merged.delete(name);
      if (byName.get(name)?.required) problems.push({ field: `${prefix}.${name}`, message: 'is required' });
    }
  }
  if (!current) {
    for (const f of owner.fields) {
      if (f.defaultValue !== null && f.defaultValue !== undefined && !merged.has(f.name) && input[f.name] !== null) merged.set(f.name, f.defaultValue);
    }
  }
  const out: [string, unknown][] = [];
  for (const [name, value] of merged) {
    const field = byName.get(name);
    if (!field) {
      const hint = current && Object.hasOwn(current, name) ? ' (send null to remove the value)' : '';
      problems.push({ field: `${prefix}.${name}`, message: `is not a field of ${opts.of ?? `assay type "${owner.name}"`}${hint}` });
      continue;
    }
    const result = checkFieldValue(field, value);
    if ('message' in result) problems.push({ field: `${prefix}.${name}`, message: result.message });
    else out.push([name, result.value]);
  }
  if (!current) {
    for (const f of owner.fields) {
      if (f.required && !merged.has(f.name) && input[f.name] !== null) problems.push({ field: `${prefix}.${f.name}`, message: 'is required' });
    }
  }
  if (problems.length) throw new errors.ValidationError(problems);
  return Object.fromEntries(out);
}
