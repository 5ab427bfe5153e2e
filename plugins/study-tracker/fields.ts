import { checkFieldValue, type AssayFieldDefinition } from '../assay-types/extensions.ts';
import type { StField } from './read.ts';
import type { Warning } from './rows.ts';

/**
 * A custom field of Study Tracker (an assay type's, a task template's, a task's) → a field
 * here: its name made an identifier if it is not one (and unique in `names`), its default typed.
 */
export function toField(f: StField, names: Set<string>, warnings: Warning[]): AssayFieldDefinition {
  let name = f.name.replace(/[^A-Za-z0-9_]/g, '_').slice(0, 64);
  if (!/^[A-Za-z]/.test(name)) name = `f_${name}`.slice(0, 64);
  for (let n = 2; names.has(name.toLowerCase()); n++) name = `${name.replace(/_\d+$/, '')}_${n}`;
  if (name !== f.name) warnings.push({ file: f.file, line: f.line, message: `field name "${f.name}" is "${name}" here (a field name is a letter, then letters, digits or _)` });
  names.add(name.toLowerCase());
  const field: AssayFieldDefinition = {
    name,
    displayName: f.displayName.slice(0, 255),
    type: f.type,
    required: f.required,
    description: f.description,
    // A dropdown without options would accept nothing: it gets one saying so.
    options: f.type === 'CHOICE' ? (f.options!.length ? f.options : ['(none)']) : null,
    defaultValue: null,
  };
  if (f.defaultValue !== null) {
    const value = convertValue(field, f.defaultValue);
    if (value === undefined) warnings.push({ file: f.file, line: f.line, message: `DefaultValue "${f.defaultValue}" is not a ${field.type} value: left out` });
    else field.defaultValue = value;
  }
  return field;
}

/**
 * A value as Study Tracker keeps it (JSON of the web client's form: numbers may be text, a date
 * a timestamp) for a field here; undefined when it does not fit.
 */
export function convertValue(field: AssayFieldDefinition, value: unknown): unknown {
  let v = value;
  if (typeof v === 'string') {
    const s = v.trim();
    if ((field.type === 'INTEGER' || field.type === 'NUMBER') && s !== '' && !Number.isNaN(Number(s))) v = Number(s);
    if (field.type === 'BOOLEAN' && (s === 'true' || s === 'false')) v = s === 'true';
  }
  if (field.type === 'DATE' && typeof v === 'number' && Number.isFinite(v)) v = new Date(v).toISOString();
  if ((field.type === 'TEXT' || field.type === 'LONG_TEXT') && (typeof v === 'number' || typeof v === 'boolean')) v = String(v);
  if (field.type === 'FILE' && v && typeof v === 'object' && !Array.isArray(v)) {
    v = Object.fromEntries(Object.entries(v).filter(([k, x]) => ['name', 'path', 'url'].includes(k) && typeof x === 'string'));
  }
  const checked = checkFieldValue(field, v);
  return 'message' in checked ? undefined : checked.value;
}
