import { Type, type TObject, type TSchema } from '@sinclair/typebox';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { Ajv } from 'ajv';
import type { PagedRead, ReadDefinition } from '../../core/kernel/operations.ts';
import { maxPageSize, readResponseSchema } from '../http/operations.ts';
import { MAX_TOOL_PAGE_SIZE, toolPageSchema } from '../http/pages.ts';
import { lazily } from '../http/lazily.ts';
import { ajvWith, compileOnce, fieldErrors } from '../../core/validation.ts';
import { compileSerializer } from '../http/compilers.ts';

/** A tool's arguments checked: the valid ones, or the failures worded as REST words them. */
export type ArgumentCheck = { valid: true; data: Record<string, unknown> } | { valid: false; errorMessage: string };

/** Tool argument validators, compiled once per process like the routes' (compileOnce). */
let ajv: Ajv | undefined;
// As the SDK's own Ajv (no defaults filled in, no coercion), plus the kernel's `x-lowercase` ids.
const argumentValidators = compileOnce((schema) => {
  const validate = (ajv ??= ajvWith({ useDefaults: false, removeAdditional: false, validateSchema: false })).compile(schema);
  return (args: unknown): ArgumentCheck =>
    validate(args)
      ? { valid: true, data: args as Record<string, unknown> }
      : { valid: false, errorMessage: fieldErrors(validate.errors ?? [], 'arguments').map((e) => `${e.field}: ${e.message}`).join('; ') };
});

/** One MCP tool, built once at start-up from a read definition. */
export interface ToolEntry {
  tool: Tool;
  read: ReadDefinition;
  validate: (args: unknown) => ArgumentCheck;
  /** The REST route's serializer (same schema), so structuredContent equals the REST body. */
  serialize: (value: unknown) => string;
  /** The read's input from validated arguments: declared properties only, with their defaults. */
  input: (args: Record<string, unknown>) => Record<string, unknown>;
}

// JSON round trip drops TypeBox's symbol keys: the wire gets plain JSON Schema.
const plain = <T>(schema: T): T => JSON.parse(JSON.stringify(schema));

/**
 * Undeclared arguments are dropped (the schema does not forbid them, so an agent's extra key
 * such as `sort` or `organizationId` must not reach the handler), and declared defaults are
 * applied as the REST route's validator does for its query string.
 */
function inputPicker(schema: TObject, lists: Set<string>): ToolEntry['input'] {
  const properties = Object.entries(schema.properties as Record<string, { default?: unknown }>);
  return (args) => {
    const input: Record<string, unknown> = {};
    for (const [name, property] of properties) {
      const value = args[name];
      if (value !== undefined) input[name] = lists.has(name) && !Array.isArray(value) ? [value] : value;
      else if (property.default !== undefined) input[name] = structuredClone(property.default);
    }
    return input;
  };
}

/** A list query parameter takes one value too, as `?category=A` does on REST: the read gets `[value]`. */
function oneOrMany(query: Record<string, TSchema>): { properties: Record<string, TSchema>; lists: Set<string> } {
  const lists = new Set<string>();
  const properties = Object.fromEntries(Object.entries(query).map(([name, property]) => {
    const list = property as TSchema & { type?: string; items?: TSchema; description?: string };
    if (list.type !== 'array' || !list.items) return [name, property];
    lists.add(name);
    const { description, ...many } = list;
    return [name, Type.Optional(Type.Union([many as TSchema, list.items], { description }))];
  }));
  return { properties, lists };
}

/** page/size for a listing tool: at most 100, or less where the read itself caps lower. */
function pageProperties(def: PagedRead) {
  const { page, size } = toolPageSchema();
  const max = maxPageSize(def);
  if (max >= MAX_TOOL_PAGE_SIZE) return { page, size };
  return { page, size: Type.Optional(Type.Integer({ minimum: 1, maximum: max, description: `Page size (default 20, at most ${max})` })) };
}

/** The path and query parameters, or the read's own tool parameters in their place (`toolParams`). */
function inputSchema(def: ReadDefinition): { schema: TObject; lists: Set<string> } {
  const own = oneOrMany({ ...(def.toolParams ? def.toolParams.properties : { ...def.params?.properties, ...def.query?.properties }) });
  const schema = Type.Object({
    ...own.properties,
    ...(def.paged ? pageProperties(def) : {}),
  });
  return { schema, lists: own.lists };
}

/** A display name from the tool name: `list_studies_by_project` → "List studies by project". */
export function toolTitle(name: string): string {
  const words = name.split(/[_.-]+/).filter(Boolean);
  const text = words.join(' ');
  return text.charAt(0).toUpperCase() + text.slice(1);
}

export function buildTools(reads: ReadDefinition[]): Map<string, ToolEntry> {
  const tools = new Map<string, ToolEntry>();
  for (const read of reads) {
    if (read.tool === false) continue;
    if (!/^[A-Za-z0-9._-]{1,128}$/.test(read.name)) throw new Error(`invalid MCP tool name "${read.name}"`);
    if (tools.has(read.name)) throw new Error(`MCP tool "${read.name}" is defined twice`);
    const { schema, lists } = inputSchema(read);
    const input = plain(schema);
    const output = readResponseSchema(read);
    tools.set(read.name, {
      read,
      tool: {
        name: read.name,
        title: toolTitle(read.name),
        description: read.description,
        inputSchema: input as Tool['inputSchema'],
        outputSchema: plain(output) as unknown as Tool['outputSchema'],
        annotations: { readOnlyHint: true, openWorldHint: false },
      },
      validate: lazily(() => argumentValidators(input)),
      serialize: lazily(() => compileSerializer(output)),
      input: inputPicker(input, lists),
    });
  }
  return tools;
}
