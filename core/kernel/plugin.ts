import type { EntitySchema } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
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

/** What a bootstrap section handler gets: the file's transaction and ref resolution. */
export interface BootstrapContext {
  em: EntityManager;
  services: KernelServices;
  /** `"<section> \"<ref>\""` or `<section>[i]`: how an error names the item. */
  label(section: string, item: Record<string, unknown>, index: number): string;
  /** An organization by ref of this file or by existing id; an unknown one fails naming `where`. */
  organization(value: unknown, where: string): Promise<string>;
  /** A user by ref of this file or by existing id. */
  user(value: unknown, where: string): Promise<string>;
  /** The organization user of a user (ref or id) in an organization. */
  organizationUser(user: unknown, organizationId: string, where: string): Promise<string>;
  /** The id behind a ref of another (earlier) plugin section of this file, e.g. `storageDrives`. */
  ref(section: string, value: unknown): string | undefined;
}

/**
 * A section of the bootstrap file that a plugin provisions (contract, "Bootstrap file"). It runs
 * inside the file's single transaction; throw `BootstrapError` with a message naming the item.
 * Returns the output entries by ref (`{ id }`).
 */
export type BootstrapSection = (ctx: BootstrapContext, items: Record<string, unknown>[]) => Promise<Record<string, { id: string }>>;

/** What an importer gets (`labdata import SOURCE PATH`): the export, the target organization, the kernel's services. */
export interface ImportContext {
  em: EntityManager;
  services: KernelServices;
  /** The export: a folder or an archive of it. */
  path: string;
  organizationId: string;
  /** `dryRun`: read and check everything, report, write nothing; `visibility` of the records it creates. */
  options: { dryRun: boolean; visibility?: string };
  progress(step: string, done: number, total: number): void;
}

/**
 * Moves another system's export in: checks all of it first, then writes it in one transaction.
 * Input it cannot import throws `BootstrapError` (`FILE:LINE: reason`); resolves to the report.
 */
export interface Importer {
  description: string;
  run(ctx: ImportContext): Promise<unknown>;
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
  /**
   * The OpenAPI tags its operations use, each with the description the API documentation shows
   * (`{ Projects: 'Top-level research records' }`); an undeclared tag gets a generic one.
   */
  tags?: Record<string, string>;
  /** Bootstrap-file sections this plugin provisions, by section name. */
  bootstrap?: Record<string, BootstrapSection>;
  /** Importers of other systems' exports this plugin offers, by source name (`labdata import SOURCE`). */
  importers?: Record<string, Importer>;
  setup?(ctx: SetupContext): S;
  register?(ctx: RegisterContext, state: S): void;
}

export function definePlugin<S = undefined>(def: PluginDefinition<S>): PluginDefinition<S> {
  return def;
}
