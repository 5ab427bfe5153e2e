import { Type, type TObject } from '@sinclair/typebox';
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import type { JsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/types.js';
import fastJson from 'fast-json-stringify';
import type { ReadDefinition } from '../kernel/operations.ts';
import { readResponseSchema } from '../http/operations.ts';
import { toolPageSchema } from '../pagination/index.ts';

/** One MCP tool, built once at start-up from a read definition. */
export interface ToolEntry {
  tool: Tool;
  read: ReadDefinition;
  validate: JsonSchemaValidator<Record<string, unknown>>;
  /** The REST route's serializer (same schema), so structuredContent equals the REST body. */
  serialize: (value: unknown) => string;
}

// JSON round trip drops TypeBox's symbol keys: the wire gets plain JSON Schema.
const plain = <T>(schema: T): T => JSON.parse(JSON.stringify(schema));

function inputSchema(def: ReadDefinition): TObject {
  const query = { ...(def.query?.properties ?? {}) };
  return Type.Object({
    ...(def.params?.properties ?? {}),
    ...query,
    ...(def.paged ? toolPageSchema() : {}),
  });
}

export function buildTools(reads: ReadDefinition[]): Map<string, ToolEntry> {
  const validator = new AjvJsonSchemaValidator();
  const tools = new Map<string, ToolEntry>();
  for (const read of reads) {
    if (read.tool === false) continue;
    if (!/^[A-Za-z0-9._-]{1,128}$/.test(read.name)) throw new Error(`invalid MCP tool name "${read.name}"`);
    if (tools.has(read.name)) throw new Error(`MCP tool "${read.name}" is defined twice`);
    const input = plain(inputSchema(read));
    const output = readResponseSchema(read);
    tools.set(read.name, {
      read,
      tool: {
        name: read.name,
        description: read.description,
        inputSchema: input as Tool['inputSchema'],
        outputSchema: plain(output) as unknown as Tool['outputSchema'],
        annotations: { readOnlyHint: true, openWorldHint: false },
      },
      validate: validator.getValidator(input as never),
      serialize: fastJson(output as never),
    });
  }
  return tools;
}
