/** A typed extension point id; the owning plugin provides it, others use it (Backstage style). */
export interface ExtensionPoint<T> {
  readonly id: string;
  /** Type carrier only; never set. */
  readonly __type?: T;
}

export function createExtensionPoint<T>(id: string): ExtensionPoint<T> {
  return { id };
}

export class ExtensionRegistry {
  #impls = new Map<string, { plugin: string; impl: unknown }>();
  #frozen = false;

  provide<T>(plugin: string, point: ExtensionPoint<T>, impl: T): void {
    if (this.#frozen) throw new Error(`plugin ${plugin} provided ${point.id} after start-up`);
    const existing = this.#impls.get(point.id);
    if (existing) throw new Error(`extension point ${point.id} is provided by both ${existing.plugin} and ${plugin}`);
    this.#impls.set(point.id, { plugin, impl });
  }

  use<T>(plugin: string, point: ExtensionPoint<T>): T {
    if (this.#frozen) throw new Error(`plugin ${plugin} used ${point.id} after start-up`);
    const entry = this.#impls.get(point.id);
    if (!entry) throw new Error(`plugin ${plugin} uses extension point ${point.id}, which no enabled plugin provides`);
    return entry.impl as T;
  }

  /** Optional use: for plugins that extend another only when it is enabled. */
  find<T>(point: ExtensionPoint<T>): T | undefined {
    return this.#impls.get(point.id)?.impl as T | undefined;
  }

  freeze(): void {
    this.#frozen = true;
  }
}
