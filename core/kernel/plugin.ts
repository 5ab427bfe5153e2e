import type { EntitySchema } from '@mikro-orm/core';
import type { FastifyBaseLogger } from 'fastify';
import type { ActivityCategory } from '../activity/index.ts';
import type { MigrationDefinition } from '../db/orm.ts';
import type { ExtensionPoint } from './extension-points.ts';
import type { ReadDefinition, WriteDefinition } from './operations.ts';
import type { KernelServices } from './services.ts';

/** Phase 1 (in dependency order): offer and use extension points. */
export interface SetupContext {
  readonly plugin: string;
  readonly services: KernelServices;
  readonly log: FastifyBaseLogger;
  provide<T>(point: ExtensionPoint<T>, impl: T): void;
  use<T>(point: ExtensionPoint<T>): T;
  /** The extension point when its owner is enabled, else undefined. */
  find<T>(point: ExtensionPoint<T>): T | undefined;
}

/** Phase 2 (after every plugin's setup, registries frozen): declare operations. */
export interface RegisterContext {
  readonly plugin: string;
  readonly services: KernelServices;
  readonly log: FastifyBaseLogger;
  read(def: ReadDefinition): void;
  write(def: WriteDefinition): void;
}

/**
 * What a plugin module exports (default export, or a named `plugin`). State a plugin needs
 * across phases (its extension registries, services) is created in `setup` and returned: it is
 * handed to `register`, so two kernels in one process never share a plugin's state.
 */
export interface PluginDefinition<S = any> {
  /** kebab-case; the name used in LABDATA_PLUGINS and in dependsOn. */
  name: string;
  version: string;
  description?: string;
  dependsOn?: string[];
  entities?: EntitySchema<any, any>[];
  /** Names must start with the plugin name, so the migrations table shows the owner. */
  migrations?: MigrationDefinition[];
  /** Event types this plugin records, with their category. */
  events?: Record<string, ActivityCategory>;
  setup?(ctx: SetupContext): S;
  register?(ctx: RegisterContext, state: S): void;
}

export function definePlugin<S = undefined>(def: PluginDefinition<S>): PluginDefinition<S> {
  return def;
}
