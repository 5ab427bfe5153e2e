import { db, type EntityManager, errors, type OperationContext, raw, type Sql, sql, type TSchema, Type } from '../../core/public.ts';

/** A request field contributed to another plugin's record (e.g. an integration's link field). */
export interface RecordField<R> {
  name: string;
  plugin: string;
  schema: TSchema;
  /** Accepted on update as well as on create (default: create only). */
  onUpdate?: boolean;
  /**
   * Runs inside the write's transaction, after the record row is written: validate (throw a
   * core error to abort everything) and store the value in the contributing plugin's own tables.
   * `false` says the value is the one stored already: the field is then no change of the update's.
   */
  save(ctx: OperationContext, record: R, value: unknown, phase: 'create' | 'update'): Promise<void | boolean>;
}

/**
 * A response field contributed to another plugin's record. `select` gives it as an SQL
 * expression (JSON, or null for none) on the record's id, so the owner selects it in the same
 * query as the record: a read stays one round trip however many plugins add fields.
 */
export interface RecordOutput {
  name: string;
  plugin: string;
  schema: TSchema;
  select(id: Sql): Sql;
  /** Send null when `select` gives null (default: leave the field out). */
  keepNull?: boolean;
}

export type RecordHook<R> = (ctx: OperationContext, record: R) => Promise<void>;
/** Gets every record being deleted at once, so a cascade is one statement per child table. */
export type DeleteHook<R> = (ctx: OperationContext, records: R[]) => Promise<void>;

/**
 * The extension points a record-owning plugin (a lifecycle record's) offers: fields on
 * create/update, response fields, and lifecycle hooks. One implementation, shared by all owners.
 */
export class RecordExtensions<R extends { id: string }> {
  readonly kind: string;
  #frozen = false;
  #reserved: Record<string, string>;
  #fields = new Map<string, RecordField<R>>();
  #outputs = new Map<string, RecordOutput>();
  #beforeDelete: DeleteHook<R>[] = [];
  #afterCreate: RecordHook<R>[] = [];
  #onCreate: RecordHook<R>[] = [];

  /**
   * @param reserved field names the owner documents but leaves to other plugins
   *   (name → plugin that fills it), so a request naming one without that plugin gets a clear 400.
   */
  constructor(kind: string, reserved: Record<string, string> = {}) {
    this.kind = kind;
    this.#reserved = reserved;
  }

  addField(field: RecordField<R>): void {
    this.#open(field.plugin, `field "${field.name}"`);
    // A plugin may contribute both the request field and the response field of one name.
    const output = this.#outputs.get(field.name);
    const existing = this.#fields.get(field.name) ?? (output && output.plugin !== field.plugin ? output : undefined);
    if (existing) throw new Error(`${this.kind} field "${field.name}" is contributed by both ${existing.plugin} and ${field.plugin}`);
    this.#fields.set(field.name, field);
  }

  addOutput(output: RecordOutput): void {
    this.#open(output.plugin, `response field "${output.name}"`);
    const field = this.#fields.get(output.name);
    const existing = this.#outputs.get(output.name) ?? (field && field.plugin !== output.plugin ? field : undefined);
    if (existing) throw new Error(`${this.kind} response field "${output.name}" is contributed by both ${existing.plugin} and ${output.plugin}`);
    this.#outputs.set(output.name, output);
  }

  /** Children that must go when the record goes; runs in the delete transaction. */
  beforeDelete(hook: DeleteHook<R>): void {
    this.#open('a plugin', 'a beforeDelete hook');
    this.#beforeDelete.push(hook);
  }

  /** Runs inside the create transaction, after the record and its fields are written (e.g. default children). */
  onCreate(hook: RecordHook<R>): void {
    this.#open('a plugin', 'an onCreate hook');
    this.#onCreate.push(hook);
  }

  async runOnCreate(ctx: OperationContext, record: R): Promise<void> {
    for (const hook of this.#onCreate) await hook(ctx, record);
  }

  /** Runs after the create transaction committed; never changes the response; failures are logged. */
  afterCreate(hook: RecordHook<R>): void {
    this.#open('a plugin', 'an afterCreate hook');
    this.#afterCreate.push(hook);
  }

  /** Closes registration (when the kernel's start-up ends): a later contribution throws. */
  freeze(): void {
    this.#frozen = true;
  }

  #open(plugin: string, what: string): void {
    if (this.#frozen) throw new Error(`${plugin} added ${what} to ${this.kind} records after start-up`);
  }

  bodyProperties(phase: 'create' | 'update'): Record<string, TSchema> {
    const props: Record<string, TSchema> = {};
    for (const f of this.#fields.values()) {
      if (phase === 'create' || f.onUpdate) props[f.name] = Type.Optional(f.schema);
    }
    return props;
  }

  outputProperties(): Record<string, TSchema> {
    const props: Record<string, TSchema> = {};
    for (const o of this.#outputs.values()) props[o.name] = Type.Optional(o.schema);
    return props;
  }

  /** 400 for a documented field whose plugin is not enabled in this deployment. */
  rejectUnavailable(body: unknown): void {
    if (!body || typeof body !== 'object') return;
    const problems = Object.keys(body)
      .filter((name) => name in this.#reserved && !this.#fields.has(name))
      .map((name) => ({
        field: name,
        message: `is not supported in this deployment: the ${this.#reserved[name]} plugin is not enabled`,
      }));
    if (problems.length) throw new errors.ValidationError(problems);
  }

  /** Saves the contributed fields present in the body; returns their names (for activity data). */
  async saveFields(ctx: OperationContext, record: R, body: Record<string, unknown>, phase: 'create' | 'update'): Promise<string[]> {
    const saved: string[] = [];
    for (const f of this.#fields.values()) {
      if (body[f.name] === undefined || (phase === 'update' && !f.onUpdate)) continue;
      if ((await f.save(ctx, record, body[f.name], phase)) !== false) saved.push(f.name);
    }
    return saved;
  }

  async runBeforeDelete(ctx: OperationContext, records: R[]): Promise<void> {
    if (records.length === 0) return;
    for (const hook of this.#beforeDelete) await hook(ctx, records);
  }

  async runAfterCreate(ctx: OperationContext, record: R): Promise<void> {
    for (const hook of this.#afterCreate) {
      try {
        await hook(ctx, record);
      } catch (err) {
        ctx.log.error({ err, kind: this.kind, id: record.id }, 'afterCreate hook failed');
      }
    }
  }

  /**
   * The contributed response fields as extra select columns of the record aliased by `id`
   * (e.g. `p.id`); `decorate` takes them from the rows. Empty when nothing is contributed.
   */
  outputColumns(id: Sql): Sql {
    if (this.#outputs.size === 0) return raw('');
    return sql`, ${db.join([...this.#outputs.values()].map((o) => sql`${o.select(id)} as ${raw(outputColumn(o.name))}`))}`;
  }

  /**
   * Adds contributed response fields to DTOs: from `rows` (selected with `outputColumns`, same
   * order as `dtos`), or, for records at hand without them (after a write), in one query.
   */
  async decorate<T extends { id: string }>(em: EntityManager, dtos: T[], rows?: readonly object[]): Promise<T[]> {
    if (this.#outputs.size === 0 || dtos.length === 0) return dtos;
    const source: readonly Record<string, unknown>[] =
      (rows as readonly Record<string, unknown>[] | undefined) ??
      (await db.query<Record<string, unknown>>(
        em,
        sql`select r.id ${this.outputColumns(raw('r.id'))} from unnest(array[${dtos.map((d) => d.id)}]::uuid[]) with ordinality r (id, n) order by r.n`,
      ));
    dtos.forEach((dto, i) => {
      for (const o of this.#outputs.values()) {
        const value = source[i]?.[outputColumn(o.name).slice(1, -1)];
        if (value !== null && value !== undefined) (dto as Record<string, unknown>)[o.name] = value;
        else if (o.keepNull) (dto as Record<string, unknown>)[o.name] = null;
      }
    });
    return dtos;
  }
}

/** The quoted column alias a contributed field is selected under. */
function outputColumn(name: string): string {
  return `"out:${name}"`;
}
