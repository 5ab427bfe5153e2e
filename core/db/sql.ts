import type { EntityManager } from '@mikro-orm/postgresql';

/**
 * A parameterised SQL fragment. Values are always bound as parameters (`?` placeholders, as
 * MikroORM's `execute` expects); fragments nest, so permission filters compose into queries.
 * An array value expands to a list (`id in (${ids})`); it must not be empty.
 */
export class Sql {
  readonly text: string;
  readonly params: readonly unknown[];
  constructor(text: string, params: readonly unknown[] = []) {
    this.text = text;
    this.params = params;
  }
}

export function sql(strings: TemplateStringsArray, ...values: unknown[]): Sql {
  let text = strings[0];
  const params: unknown[] = [];
  values.forEach((value, i) => {
    if (value instanceof Sql) {
      text += value.text;
      params.push(...value.params);
    } else {
      text += '?';
      params.push(value);
    }
    text += strings[i + 1];
  });
  return new Sql(text, params);
}

/** Trusted SQL text (identifiers chosen by code, never by the caller). */
export function raw(text: string): Sql {
  return new Sql(text);
}

export function join(parts: Sql[], separator = ', '): Sql {
  return new Sql(parts.map((p) => p.text).join(separator), parts.flatMap((p) => p.params));
}

export async function query<T = Record<string, unknown>>(em: EntityManager, q: Sql): Promise<T[]> {
  return (await em.execute(q.text, [...q.params])) as T[];
}

export async function queryOne<T = Record<string, unknown>>(em: EntityManager, q: Sql): Promise<T | undefined> {
  const rows = await query<T>(em, q);
  return rows[0];
}

/** Raw timestamps come back as text from MikroORM's pg driver; the wire wants ISO 8601 UTC. */
export function isoDate(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  const d = value instanceof Date ? value : new Date(String(value));
  return d.toISOString();
}
