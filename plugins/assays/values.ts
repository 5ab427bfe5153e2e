import { errors, schemas } from '../../core/public.ts';
import type { AssayFieldDefinition, AssayTypeRecord } from '../assay-types/extensions.ts';

export type Values = Record<string, unknown>;

const DATE = new RegExp(schemas.DateInput().pattern!);
const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;

/** The stored form of one value, or the message saying why it does not fit the field. */
function check(field: AssayFieldDefinition, value: unknown): { value: unknown } | { message: string } {
  switch (field.type) {
    case 'TEXT':
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
  }
}

/**
 * Checks an assay's values against its type's fields; a failure is a 400 naming each
 * `values.<field>`. On create (`current` undefined) every required field needs a value. On
 * update the given values are merged into the current ones (null removes a value) and the
 * result is checked again; fields made required after the assay was created are not enforced
 * then (they apply to new assays), but a required value cannot be removed.
 */
export function validateValues(type: AssayTypeRecord, input: Values, current?: Values): Values {
  const byName = new Map(type.fields.map((f) => [f.name, f]));
  const problems: errors.FieldError[] = [];
  // A Map, not an object: a name such as "__proto__" must be refused like any unknown name.
  const merged = new Map(Object.entries(current ?? {}));
  for (const [name, value] of Object.entries(input)) {
    if (value !== null) merged.set(name, value);
    else {
      merged.delete(name);
      if (byName.get(name)?.required) problems.push({ field: `values.${name}`, message: 'is required' });
    }
  }
  const out: [string, unknown][] = [];
  for (const [name, value] of merged) {
    const field = byName.get(name);
    if (!field) {
      const hint = current && Object.hasOwn(current, name) ? ' (send null to remove the value)' : '';
      problems.push({ field: `values.${name}`, message: `is not a field of assay type "${type.name}"${hint}` });
      continue;
    }
    const result = check(field, value);
    if ('message' in result) problems.push({ field: `values.${name}`, message: result.message });
    else out.push([name, result.value]);
  }
  if (!current) {
    for (const f of type.fields) {
      if (f.required && !merged.has(f.name) && input[f.name] !== null) problems.push({ field: `values.${f.name}`, message: 'is required' });
    }
  }
  if (problems.length) throw new errors.ValidationError(problems);
  return Object.fromEntries(out);
}
