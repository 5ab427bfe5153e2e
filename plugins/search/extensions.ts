import type { db, KernelServices, SetupContext } from '../../core/public.ts';
import { checkSource, type SearchSource, sourceMigration } from './documents.ts';

export type { SearchSource, SearchWeight } from './documents.ts';

/**
 * `search.sources`: the searchable kinds of one kernel, as their plugins declare them. It exists
 * whether or not the search plugin is enabled or already set up, so a plugin declares its records
 * in its own `setup` without depending on the search plugin or on the order of the plugin list
 * (the search plugin reads it when it registers its operations, after every plugin's setup).
 */
export class SearchSources {
  #sources = new Map<string, SearchSource & { plugin: string }>();
  #frozen = false;

  add(plugin: string, source: SearchSource): void {
    if (this.#frozen) throw new Error(`plugin ${plugin} declared search source ${source.kind} after start-up`);
    checkSource(source);
    const existing = this.#sources.get(source.kind);
    if (existing) throw new Error(`search source ${source.kind} is declared by both ${existing.plugin} and ${plugin}`);
    this.#sources.set(source.kind, { ...source, plugin });
  }

  /** In declaration order: the plugins' order, parents' kinds before their children's. */
  all(): (SearchSource & { plugin: string })[] {
    return [...this.#sources.values()];
  }

  freeze(): void {
    this.#frozen = true;
  }
}

// One registry per kernel (two kernels in one process, as tests run them, never share one).
const registries = new WeakMap<KernelServices, SearchSources>();

/** The search sources of this kernel (`search.sources`). */
export function searchSources(services: KernelServices): SearchSources {
  let registry = registries.get(services);
  if (!registry) {
    const created = (registry = new SearchSources());
    registries.set(services, created);
    services.startup.onEnded(() => created.freeze());
  }
  return registry;
}

/** A plugin's searchable kind: the migration that indexes it and the declaration for its `setup`. */
export interface Searchable {
  source: SearchSource;
  /** Goes last in the owner's migration list (its table as the earlier migrations leave it). */
  migration: db.MigrationDefinition;
  /** Call in the owner's `setup`. */
  declare(ctx: SetupContext): void;
}

/**
 * Makes a plugin's records searchable (plugins/search/README.md, "Making records searchable"):
 * `migration` keeps their documents in the writing transaction (statement-level triggers on the
 * owner's tables, installed only where the search plugin is enabled), `declare` tells the search
 * plugin how to show them.
 */
export function searchable(plugin: string, source: SearchSource): Searchable {
  return {
    source,
    migration: sourceMigration(plugin, source),
    declare: (ctx) => searchSources(ctx.services).add(ctx.plugin, source),
  };
}
