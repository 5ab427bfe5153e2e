import { errors } from '../../core/public.ts';
import type { AssayFieldDefinition, StandardTask } from './extensions.ts';
import type { FieldInput, TaskInput } from './schemas.ts';
import { checkFieldValue } from './values.ts';

/**
 * The rules of an assay type's fields beyond their schema (names unique case-insensitively,
 * `options` exactly on CHOICE fields, no repeated option), and the stored shape: every
 * property present, tasks sorted by `order` (a task without one takes its index).
 */
export function normalizeFields(input: FieldInput[], prefix = 'fields'): AssayFieldDefinition[] {
  const problems: errors.FieldError[] = [];
  const seen = new Map<string, number>();
  input.forEach((f, i) => {
    const key = f.name.toLowerCase();
    const first = seen.get(key);
    if (first !== undefined) problems.push({ field: `${prefix}.${i}.name`, message: `repeats the name of ${prefix}.${first} ("${f.name}")` });
    else seen.set(key, i);
    if (f.type === 'CHOICE' && !f.options) problems.push({ field: `${prefix}.${i}.options`, message: 'is required for a CHOICE field' });
    if (f.type !== 'CHOICE' && f.options) problems.push({ field: `${prefix}.${i}.options`, message: 'is allowed only on a CHOICE field' });
    const repeated = f.options?.find((o, j) => f.options!.indexOf(o) !== j);
    if (repeated !== undefined) problems.push({ field: `${prefix}.${i}.options`, message: `repeats "${repeated}"` });
    if (f.defaultValue !== undefined && f.defaultValue !== null && (f.type !== 'CHOICE' || f.options)) {
      const checked = checkFieldValue({ type: f.type, options: f.options ?? null }, f.defaultValue);
      if ('message' in checked) problems.push({ field: `${prefix}.${i}.defaultValue`, message: checked.message });
    }
  });
  if (problems.length) throw new errors.ValidationError(problems);
  return input.map((f) => ({
    name: f.name,
    displayName: f.displayName,
    type: f.type,
    required: f.required ?? false,
    description: f.description ?? null,
    options: f.type === 'CHOICE' ? f.options! : null,
    defaultValue: f.defaultValue === undefined || f.defaultValue === null ? null : (checkFieldValue({ type: f.type, options: f.options ?? null }, f.defaultValue) as { value: unknown }).value,
  }));
}

export function normalizeTasks(input: TaskInput[]): StandardTask[] {
  const problems: errors.FieldError[] = [];
  const tasks = input.map((t, i) => {
    let fields: AssayFieldDefinition[] = [];
    try {
      fields = normalizeFields(t.fields ?? [], `tasks.${i}.fields`);
    } catch (e) {
      if (!(e instanceof errors.ValidationError)) throw e;
      problems.push(...e.errors);
    }
    return { label: t.label, order: t.order ?? i, fields };
  });
  if (problems.length) throw new errors.ValidationError(problems);
  // Array sort is stable: tasks with the same order keep the order they were given in.
  return tasks.sort((a, b) => a.order - b.order);
}
