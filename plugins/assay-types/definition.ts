import { errors } from '../../core/public.ts';
import type { AssayFieldDefinition, StandardTask } from './extensions.ts';
import type { FieldInput, TaskInput } from './schemas.ts';

/**
 * The rules of an assay type's fields beyond their schema (names unique case-insensitively,
 * `options` exactly on CHOICE fields, no repeated option), and the stored shape: every
 * property present, tasks sorted by `order` (a task without one takes its index).
 */
export function normalizeFields(input: FieldInput[]): AssayFieldDefinition[] {
  const problems: errors.FieldError[] = [];
  const seen = new Map<string, number>();
  input.forEach((f, i) => {
    const key = f.name.toLowerCase();
    const first = seen.get(key);
    if (first !== undefined) problems.push({ field: `fields.${i}.name`, message: `repeats the name of fields.${first} ("${f.name}")` });
    else seen.set(key, i);
    if (f.type === 'CHOICE' && !f.options) problems.push({ field: `fields.${i}.options`, message: 'is required for a CHOICE field' });
    if (f.type !== 'CHOICE' && f.options) problems.push({ field: `fields.${i}.options`, message: 'is allowed only on a CHOICE field' });
    const repeated = f.options?.find((o, j) => f.options!.indexOf(o) !== j);
    if (repeated !== undefined) problems.push({ field: `fields.${i}.options`, message: `repeats "${repeated}"` });
  });
  if (problems.length) throw new errors.ValidationError(problems);
  return input.map((f) => ({
    name: f.name,
    displayName: f.displayName,
    type: f.type,
    required: f.required ?? false,
    description: f.description ?? null,
    options: f.type === 'CHOICE' ? f.options! : null,
  }));
}

export function normalizeTasks(input: TaskInput[]): StandardTask[] {
  // Array sort is stable: tasks with the same order keep the order they were given in.
  return input.map((t, i) => ({ label: t.label, order: t.order ?? i })).sort((a, b) => a.order - b.order);
}
