import { parse } from 'csv-parse';
import { errors } from '../../core/public.ts';
import type { FileSpec } from './format.ts';
import type { ExportSource } from './source.ts';

/** What the report says of input it reads but leaves out, by file and line. */
export interface Warning {
  file: string;
  line: number;
  message: string;
}

/** Input the import cannot take: `labdata: FILE:LINE: reason`, exit 2, nothing written. */
export function fail(file: string, line: number, reason: string): never {
  throw new errors.BootstrapError(`${file}:${line}: ${reason}`);
}

// SimpleDateFormat("yyyy-MM-dd'T'HH:mm:ssXXX"): seconds, and Z or an offset.
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(Z|[+-]\d{2}:\d{2})$/;

/** One data row of a file: its cells read by column name, each failure naming FILE:LINE. */
export class Row {
  readonly file: string;
  readonly line: number;
  readonly #cells: (string | null)[];
  readonly #columns: Map<string, number>;

  constructor(file: string, line: number, cells: (string | null)[], columns: Map<string, number>) {
    this.file = file;
    this.line = line;
    this.#cells = cells;
    this.#columns = columns;
  }

  fail(reason: string): never {
    fail(this.file, this.line, reason);
  }

  /** The cell as written: null for an empty unquoted field (OpenCSV's null), else the text. */
  raw(column: string): string | null {
    const i = this.#columns.get(column);
    return i === undefined ? null : (this.#cells[i] ?? null);
  }

  /** Text; an empty field (written for null) is null. */
  text(column: string): string | null {
    const v = this.raw(column);
    return v === null || v === '' ? null : v;
  }

  /** Text that must be there. */
  required(column: string): string {
    const v = this.text(column);
    if (v === null) this.fail(`${column} is empty`);
    return v;
  }

  /** A Study Tracker id (a positive whole number), or null for an empty field. */
  id(column: string): number | null {
    const v = this.text(column);
    if (v === null) return null;
    if (!/^[0-9]{1,15}$/.test(v)) this.fail(`${column} "${v}" is not an id`);
    return Number(v);
  }

  requiredId(column: string): number {
    const v = this.id(column);
    if (v === null) this.fail(`${column} is empty`);
    return v;
  }

  /** Ids written as one field, comma-separated (a study's Users, Keywords ...). */
  ids(column: string): number[] {
    const v = this.text(column);
    if (v === null) return [];
    return v.split(',').map((part) => {
      const s = part.trim();
      if (!/^[0-9]{1,15}$/.test(s)) this.fail(`${column} "${v}" is not a comma-separated list of ids`);
      return Number(s);
    });
  }

  bool(column: string): boolean {
    const v = this.text(column);
    if (v !== 'true' && v !== 'false') this.fail(`${column} "${v ?? ''}" is not true or false`);
    return v === 'true';
  }

  /** A whole number (Order, FieldOrder); "null" (String.valueOf of a missing Integer) is null. */
  int(column: string): number | null {
    const v = this.text(column);
    if (v === null || v === 'null') return null;
    if (!/^-?[0-9]{1,9}$/.test(v)) this.fail(`${column} "${v}" is not a whole number`);
    return Number(v);
  }

  /** A date as the export writes them (yyyy-MM-dd'T'HH:mm:ssXXX), or null; anything else is malformed. */
  date(column: string): Date | null {
    const v = this.text(column);
    if (v === null) return null;
    const m = DATE_TIME.exec(v);
    const d = m ? new Date(v) : undefined;
    // Date() rolls 2024-02-30 over to March: the fields must come back as written.
    const [, y, mo, da, h, mi, s] = m ?? [];
    const sameDay = d && !Number.isNaN(d.getTime()) && new Date(Date.UTC(+y, +mo - 1, +da)).getUTCDate() === +da && +mo <= 12 && +h < 24 && +mi < 60 && +s < 60;
    if (!sameDay) this.fail(`${column} "${v}" is not a date (yyyy-MM-ddTHH:mm:ss with an offset)`);
    return d!;
  }

  requiredDate(column: string): Date {
    const d = this.date(column);
    if (d === null) this.fail(`${column} is empty`);
    return d;
  }

  /** JSON (Attributes, Fields, Data, Details); "null" and an empty field are null. */
  json(column: string): unknown {
    const v = this.text(column);
    if (v === null || v === 'null') return null;
    try {
      return JSON.parse(v);
    } catch {
      return this.fail(`${column} is not valid JSON`);
    }
  }

  /** A JSON object (or null/{} for none): Fields, Data, Details. */
  object(column: string): Record<string, unknown> {
    const v = this.json(column);
    if (v === null) return {};
    if (typeof v !== 'object' || Array.isArray(v)) this.fail(`${column} is not a JSON object`);
    return v as Record<string, unknown>;
  }

  /** A JSON object kept as its text (checked now, parsed when used: big files hold many). */
  objectText(column: string): string {
    this.object(column);
    const v = this.text(column);
    return v === null || v === 'null' ? '{}' : v;
  }

  oneOf<T extends string>(column: string, values: readonly T[]): T {
    const v = this.text(column);
    if (v === null || !(values as readonly string[]).includes(v)) this.fail(`${column} "${v ?? ''}" is not one of ${values.join(', ')}`);
    return v as T;
  }
}

/** A file's header: where each column is, and whether an optional one is there. */
export interface Table {
  file: string;
  columns: Map<string, number>;
  rows: AsyncIterable<Row>;
}

/**
 * Reads one CSV file of the export as OpenCSV's CSVWriter writes it: every field quoted, `"`
 * doubled, `\n` line ends, a header row (csv-parse: quoting, embedded line breaks, a BOM). A
 * column the import needs that the header lacks is an error; one it does not know is a warning.
 * Rows stream: the file is never held in memory.
 */
export async function readTable(source: ExportSource, file: string, spec: FileSpec, warnings: Warning[]): Promise<Table> {
  const parser = parse({
    bom: true,
    info: true,
    relax_column_count: true,
    // An unquoted empty field is how OpenCSV writes null; a quoted one is an empty string.
    cast: (value, context) => (context.quoting ? value : value === '' ? null : value),
  });
  const input = await source.open(file);
  input.on('error', (e) => parser.destroy(e));
  input.pipe(parser);
  const iterator = parser[Symbol.asyncIterator]() as AsyncIterator<{ record: (string | null)[]; info: { lines: number } }>;
  let lastLine = 0;
  const next = async () => {
    try {
      return await iterator.next();
    } catch (e) {
      const err = e as { code?: string; lines?: number; message: string };
      // csv-parse's errors carry the line; the first sentence is the reason.
      return fail(file, err.lines ?? lastLine + 1, `not CSV as the export writes it: ${err.message.replace(/^Invalid Record Length: /, '').split(/(?<=\.) /)[0]}`);
    }
  };
  const first = await next();
  if (first.done) fail(file, 1, 'the file is empty (no header row)');
  lastLine = first.value.info.lines;
  const header = first.value.record.map((c) => c ?? '');
  const columns = new Map<string, number>();
  header.forEach((name, i) => {
    if (columns.has(name)) fail(file, 1, `column "${name}" appears twice`);
    columns.set(name, i);
  });
  const missing = spec.needed.filter((c) => !columns.has(c));
  if (missing.length) fail(file, 1, `missing column${missing.length > 1 ? 's' : ''} ${missing.map((c) => `"${c}"`).join(', ')}`);
  const known = new Set([...spec.needed, ...(spec.known ?? [])]);
  for (const name of header) if (!known.has(name)) warnings.push({ file, line: 1, message: `unknown column "${name}": left out` });
  const width = header.length;
  async function* rows(): AsyncGenerator<Row> {
    for (;;) {
      const item = await next();
      if (item.done) return;
      const line = lastLine + 1;
      lastLine = item.value.info.lines;
      const cells = item.value.record;
      if (cells.length !== width) fail(file, line, `${cells.length} fields where the header has ${width}`);
      yield new Row(file, line, cells, columns);
    }
  }
  return { file, columns, rows: rows() };
}

/** Every row of a file, each turned by `map` into what is kept (the rows themselves are not). */
export async function readAll<T = Row>(source: ExportSource, file: string, spec: FileSpec, warnings: Warning[], map: (row: Row) => T = (row) => row as T): Promise<T[]> {
  const table = await readTable(source, file, spec, warnings);
  const out: T[] = [];
  for await (const row of table.rows) out.push(map(row));
  return out;
}
