import type { FastifyReply } from 'fastify';
import { HttpError } from '../../core/errors.ts';

/** 429 with the envelope (REST) or a JSON-RPC error (/mcp); the limit headers are already set. */
export class TooManyRequestsError extends HttpError {
  constructor(retryAfterSeconds: number) {
    super(429, `Rate limit exceeded for this API key; retry after ${retryAfterSeconds} s`);
  }
}

interface Window {
  start: number;
  count: number;
}

// The policy's name in the IETF headers (draft-ietf-httpapi-ratelimit-headers-08 and later).
const POLICY = 'per-key';

/**
 * Requests per API key in fixed windows, in this process's memory: no database round trip per
 * request, so the limit holds per instance (N instances behind a balancer allow up to N times it).
 */
export class RateLimiter {
  readonly limit: number;
  readonly windowMs: number;
  readonly #windows = new Map<string, Window>();
  #lastSweep = 0;

  constructor(limit: number, windowMs = 60_000) {
    this.limit = limit;
    this.windowMs = windowMs;
  }

  /** Counts one request of `key`; sets `RateLimit-Policy` and `RateLimit`, and throws 429 past the quota. */
  take(key: string, reply: FastifyReply, now = Date.now()): void {
    let window = this.#windows.get(key);
    if (!window || now - window.start >= this.windowMs) {
      window = { start: now, count: 0 };
      this.#windows.set(key, window);
      this.#sweep(now);
    }
    window.count++;
    const reset = Math.max(1, Math.ceil((window.start + this.windowMs - now) / 1000));
    reply.header('ratelimit-policy', `"${POLICY}";q=${this.limit};w=${Math.round(this.windowMs / 1000)}`);
    reply.header('ratelimit', `"${POLICY}";r=${Math.max(0, this.limit - window.count)};t=${reset}`);
    if (window.count > this.limit) {
      reply.header('retry-after', String(reset));
      throw new TooManyRequestsError(reset);
    }
  }

  /** Forgets windows that have ended, at most once per window length (memory stays bounded by active keys). */
  #sweep(now: number) {
    if (now - this.#lastSweep < this.windowMs) return;
    this.#lastSweep = now;
    for (const [key, w] of this.#windows) if (now - w.start >= this.windowMs) this.#windows.delete(key);
  }
}
