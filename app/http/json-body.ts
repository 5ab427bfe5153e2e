import { isUtf8 } from 'node:buffer';
import type { FastifyInstance } from 'fastify';
import { BadRequestError, HttpError } from '../../core/errors.ts';

/** A body that cannot be read as JSON at all (not UTF-8, nested too deep): a JSON-RPC parse error on /mcp. */
export class UnparsableBody extends BadRequestError {}

/** Charsets a JSON body may be declared in: UTF-8, and ASCII, which is UTF-8 too. */
const UTF8_CHARSETS = new Set(['utf-8', 'utf8', 'us-ascii']);

/** The deepest nesting of objects and arrays a JSON body may have; no request schema comes near it. */
export const MAX_JSON_DEPTH = 64;

/**
 * True when `text` nests objects/arrays deeper than `max`. A single pass over the characters,
 * without recursion, before anything parses or walks the value: a body nested 10,000 deep
 * would otherwise overflow the stack of every recursive check after the parser.
 */
export function jsonDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: the next character is escaped
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return true;
    } else if (c === 0x7d || c === 0x5d) {
      depth--;
    }
  }
  return false;
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/**
 * Replaces the JSON body parser with one that refuses over-deep bodies (400) and otherwise
 * is Fastify's own (prototype-poisoning checks, body limit → 413, malformed → 400).
 * An empty body is no body: clients that send `Content-Type: application/json` on every
 * request (a DELETE, a complete without its optional body) get the route's answer, not a 400.
 */
export function registerJsonParser(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    const bytes = body as Buffer;
    if (bytes.length === 0) {
      done(null, undefined);
      return;
    }
    // JSON on the wire is UTF-8 (RFC 8259, spec "Content type"): a body declared in another charset is not read as UTF-8.
    const charset = /;\s*charset\s*=\s*"?([^";\s]*)/i.exec(request.headers['content-type'] ?? '')?.[1].toLowerCase();
    if (charset !== undefined && !UTF8_CHARSETS.has(charset)) {
      done(new HttpError(415, `Unsupported Media Type: charset "${charset.replace(/[^\w.-]/g, '?').slice(0, 40)}"; request bodies are UTF-8 JSON`), undefined);
      return;
    }
    // A compressed (or otherwise encoded) body is not decoded here: refused, not misread (RFC 9110, 8.4).
    const coding = String(request.headers['content-encoding'] ?? '').trim().toLowerCase();
    if (coding !== '' && coding !== 'identity') {
      done(new HttpError(415, `Unsupported Media Type: Content-Encoding "${coding.replace(/[^\w.,-]/g, '?').slice(0, 40)}"; send request bodies without a content coding`), undefined);
      return;
    }
    // Decoding would turn invalid bytes into U+FFFD without a word: the record would not hold what was sent.
    if (!isUtf8(bytes)) {
      done(new UnparsableBody('The body is not valid UTF-8'), undefined);
      return;
    }
    const text = bytes.toString('utf8');
    if (jsonDeeperThan(text, MAX_JSON_DEPTH)) {
      done(new UnparsableBody(`The JSON body is nested deeper than ${MAX_JSON_DEPTH} levels`), undefined);
      return;
    }
    parse(request, text, (err, value) => {
      // Fastify refuses prototype keys as "invalid JSON"; when the text is valid JSON, say why.
      if (err && isJson(text)) done(new BadRequestError('The JSON body must not contain "__proto__" or "constructor.prototype" keys'), undefined);
      else done(err, value);
    });
  });
}
