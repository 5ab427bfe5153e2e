/**
 * A small JSON-over-HTTP client for connectors to vendor APIs (ELN platforms, Git hosts, ...):
 * base URL, auth headers and a timeout per call (global fetch + AbortSignal.timeout), and one
 * error type that says whether the vendor answered (status) or could not be reached at all.
 */
import net from 'node:net';
import { errors, type OperationContext } from '../../core/public.ts';
import { provisioning, StepFailedError } from './provisioning.ts';
import { METADATA_HOSTS, urlHost } from './outbound.ts';

/** Where the service may send requests: `LABDATA_VENDOR_ALLOW_LINK_LOCAL` lifts the link-local and metadata ban. */
export interface OutboundPolicy {
  allowLinkLocal: boolean;
}

/** The IPv4 address inside an IPv4-mapped IPv6 address (`::ffff:a9fe:a9fe`), when it is one. */
function mappedIpv4(host: string): string | undefined {
  const m = /^::ffff:(?:([0-9.]+)|([0-9a-f]{1,4}):([0-9a-f]{1,4}))$/.exec(host);
  if (!m) return undefined;
  if (m[1]) return m[1];
  const hi = parseInt(m[2], 16);
  const lo = parseInt(m[3], 16);
  return [hi >> 8, hi & 255, lo >> 8, lo & 255].join('.');
}

function isLoopback(host: string): boolean {
  const v4 = mappedIpv4(host) ?? host;
  if (net.isIPv4(v4)) return v4.startsWith('127.');
  return host === '::1' || host === 'localhost' || host.endsWith('.localhost');
}

/** 169.254.0.0/16, fe80::/10 and the metadata names and addresses. */
function isLinkLocalOrMetadata(host: string): boolean {
  if (METADATA_HOSTS.has(host)) return true;
  const v4 = mappedIpv4(host) ?? host;
  if (net.isIPv4(v4)) return v4.startsWith('169.254.') || METADATA_HOSTS.has(v4);
  return net.isIPv6(host) && /^fe[89ab][0-9a-f]:/.test(host);
}

/**
 * Why `value` may not be a vendor base URL (ELN, Git host, S3 endpoint), or undefined when it
 * may: `https:` only, plain `http:` only to a loopback address (local stubs, tests); no
 * credentials in the URL (they would be shown with the settings); no link-local or cloud metadata
 * address (SSRF to instance credentials) unless the policy allows it. Never echoes the value.
 */
export function vendorUrlProblem(value: unknown, policy: OutboundPolicy): string | undefined {
  if (typeof value !== 'string' || !value.trim()) return 'must be an https URL';
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be an https URL';
  }
  const host = urlHost(url);
  if (url.protocol === 'http:') {
    if (!isLoopback(host)) return 'must be an https URL (plain http is allowed to a loopback address only)';
  } else if (url.protocol !== 'https:') {
    return `must be an https URL, not ${url.protocol.replace(/:$/, '')}`;
  }
  if (!host) return 'must be an https URL';
  if (url.username || url.password) return 'must not contain a user name or password (put secrets in credentials)';
  if (!policy.allowLinkLocal && isLinkLocalOrMetadata(host)) {
    return 'must not be a link-local or cloud metadata address (set LABDATA_VENDOR_ALLOW_LINK_LOCAL=true to allow it)';
  }
  return undefined;
}

/** A failed vendor call. `status` is the HTTP status, or null when the vendor was not reached (down, timeout). */
export class VendorError extends Error {
  readonly vendor: string;
  readonly status: number | null;
  constructor(vendor: string, status: number | null, message: string) {
    super(message);
    this.name = 'VendorError';
    this.vendor = vendor;
    this.status = status;
  }

  /** The vendor was down, slow or failing (5xx, 429): a later retry may succeed. */
  get transient(): boolean {
    return this.status === null || this.status >= 500 || this.status === 429;
  }
}

/** Where and how a VendorClient calls its vendor. */
export interface VendorClientOptions {
  /** Names the vendor in error messages (e.g. `ELN A`). */
  vendor: string;
  baseUrl: string;
  /** Sent with every call (authorization). Never logged or put in messages. */
  headers?: Record<string, string>;
  /** Per-call timeout (default 10 s). */
  timeoutMs?: number;
}

/** One call's body, extra headers, accepted error statuses and timeout. */
export interface VendorRequest {
  body?: unknown;
  headers?: Record<string, string>;
  /** Statuses that are answers rather than failures (e.g. 404 for "does it exist?"). */
  accept?: number[];
  timeoutMs?: number;
}

/** A vendor's answer: status and parsed JSON body. */
export interface VendorResponse<T> {
  status: number;
  body: T;
}

/** A JSON-over-HTTP client for one vendor API (base URL, headers, timeout per call). */
export class VendorClient {
  readonly vendor: string;
  readonly #base: URL;
  readonly #headers: Record<string, string>;
  readonly #timeoutMs: number;

  constructor(opts: VendorClientOptions) {
    this.vendor = opts.vendor;
    let base: URL;
    try {
      base = new URL(opts.baseUrl.endsWith('/') ? opts.baseUrl : opts.baseUrl + '/');
    } catch {
      throw new VendorError(opts.vendor, null, `${opts.vendor}: invalid base URL`);
    }
    // Also checked when the URL is stored; this catches rows stored before the rule (the
    // link-local ban needs the deployment's setting, so it is enforced where the URL is stored).
    const scheme = vendorUrlProblem(base.href, { allowLinkLocal: true });
    if (scheme) throw new VendorError(opts.vendor, 400, `${opts.vendor}: the base URL ${scheme}`);
    this.#base = base;
    this.#headers = opts.headers ?? {};
    this.#timeoutMs = opts.timeoutMs ?? 10_000;
  }

  /** `path` is relative to the base URL (no leading slash needed); segments must already be encoded. */
  async request<T = unknown>(method: string, path: string, req: VendorRequest = {}): Promise<VendorResponse<T>> {
    const url = new URL(path.replace(/^\//, ''), this.#base);
    const headers: Record<string, string> = { accept: 'application/json', ...this.#headers, ...req.headers };
    let body: string | undefined;
    if (req.body !== undefined) {
      body = JSON.stringify(req.body);
      headers['content-type'] = 'application/json';
    }
    const what = `${method} ${url.pathname}`;
    let res: Response;
    try {
      res = await fetch(url, { method, headers, body, signal: AbortSignal.timeout(req.timeoutMs ?? this.#timeoutMs) });
    } catch (err) {
      const cause = err instanceof Error && err.name === 'TimeoutError' ? 'timed out' : errorCause(err);
      throw new VendorError(this.vendor, null, `${this.vendor} is unreachable (${cause}): ${what}`);
    }
    const text = await res.text().catch(() => '');
    if (!res.ok && !req.accept?.includes(res.status)) {
      const message = withoutCredentials(vendorMessage(text), { ...this.#headers, ...req.headers });
      throw new VendorError(this.vendor, res.status, `${this.vendor} ${what} failed: HTTP ${res.status}${message}`);
    }
    let parsed: unknown = undefined;
    if (text) {
      try {
        parsed = JSON.parse(text);
      } catch {
        if (res.ok) throw new VendorError(this.vendor, res.status, `${this.vendor} ${what}: the response is not JSON`);
      }
    }
    return { status: res.status, body: parsed as T };
  }
}

/** The vendor's own error message, when its body has one (short; never the whole body). */
function vendorMessage(text: string): string {
  try {
    const body = JSON.parse(text) as { message?: unknown; error?: unknown };
    const message = typeof body.message === 'string' ? body.message : typeof body.error === 'string' ? body.error : undefined;
    return message ? `: ${message.slice(0, 200)}` : '';
  } catch {
    return '';
  }
}

/**
 * The vendor's text without the credentials this call sent: a vendor may echo the request's
 * headers in its error, and the message travels on into 400s, activity records and logs.
 * Each auth header's value is taken out, and its token alone (`Bearer <token>`).
 */
function withoutCredentials(message: string, authHeaders: Record<string, string>): string {
  let out = message;
  for (const value of Object.values(authHeaders)) {
    for (const secret of [value, value.replace(/^\S+\s+/, '')]) if (secret.length >= 4) out = out.split(secret).join('[REDACTED]');
  }
  return out;
}

/** `fetch failed` hides the reason (ECONNREFUSED, ENOTFOUND, ...) in `cause`. */
function errorCause(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } })?.cause;
  return cause?.code ?? cause?.message ?? (err instanceof Error ? err.message : String(err));
}

/**
 * A check a request makes against a vendor before accepting a link (does the folder exist?):
 * the vendor's answer, or `{ answered: false }` when it could not be asked (down, slow, 5xx), so
 * the caller can accept now and verify later instead of hanging on the vendor. A refusal that a
 * retry cannot fix (bad credentials, 4xx) is the caller's 400.
 */
export async function askVendor<T>(call: () => Promise<T>): Promise<{ answered: true; value: T } | { answered: false; reason: string }> {
  try {
    return { answered: true, value: await call() };
  } catch (err) {
    if (!(err instanceof VendorError)) throw err;
    if (err.transient) return { answered: false, reason: err.message };
    throw new errors.BadRequestError(`${err.message} (check the integration's settings and credentials)`);
  }
}

/**
 * Work inside a provisioning step that calls a vendor: a transient failure is thrown as is (the
 * job queue retries it with backoff); one no retry can fix — the vendor's 4xx (missing folder,
 * bad credentials) or our own 4xx (integration gone or misconfigured) — fails the step at once,
 * with its reason.
 */
export async function vendorStep<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if ((err instanceof VendorError && !err.transient) || (err instanceof errors.HttpError && err.statusCode < 500)) throw new StepFailedError(err.message);
    throw err;
  }
}

/** How long a request may wait for a vendor's answer, and a provisioning step's call (default settings). */
const DEFAULT_TIMEOUTS = { check: 5_000, provision: 30_000 };

/** An integration as a connector needs it (the integrations plugin resolves it, credentials opened). */
export interface VendorIntegration {
  id: string;
  settings: Record<string, unknown>;
  credentials: Record<string, unknown> | null;
}

/** Where, how long and with which secret (token, API key) a connector calls its vendor. */
export interface VendorEndpoint {
  baseUrl: string;
  timeoutMs?: number;
  secret: string;
}

/**
 * Where, how long and with which secret to call a vendor, from an integration: `settings.baseUrl`
 * (required), `settings.checkTimeoutMs` (calls a request waits for), `settings.timeoutMs`
 * (provisioning calls) and the credential named `secret`. 400 naming what is missing.
 */
export function vendorEndpoint(
  vendor: string,
  integration: VendorIntegration,
  purpose: 'check' | 'provision',
  secret: string,
): VendorEndpoint {
  const { settings, credentials } = integration;
  const value = credentials?.[secret];
  if (typeof settings.baseUrl !== 'string' || !settings.baseUrl || typeof value !== 'string') {
    throw new errors.BadRequestError(`integration ${integration.id} is not configured for ${vendor}: it needs settings.baseUrl and credentials.${secret}`);
  }
  const timeout = purpose === 'check' ? settings.checkTimeoutMs : settings.timeoutMs;
  return { baseUrl: settings.baseUrl, timeoutMs: typeof timeout === 'number' && timeout > 0 ? timeout : DEFAULT_TIMEOUTS[purpose], secret: value };
}

/** What `linkExisting` checks at create time and verifies later. */
export interface ExistingLink {
  /** Asks the vendor whether the linked thing (folder, container, group) exists. */
  exists(): Promise<boolean>;
  /** The request field naming it, and the message when the vendor says it does not exist. */
  field: string;
  missing: string;
  /** A provisioning step of the caller's plugin that runs `verifyExisting` later. */
  verifyStep: string;
}

/**
 * A record links something that must already exist in an external system (a notebook folder, a
 * project container): one vendor call at create time, 400 on `field` when the vendor says it does
 * not exist. When the vendor cannot be asked (down, slow, 5xx) the link is accepted and
 * `verifyStep` checks it later, the record staying INITIALIZING meanwhile: creation waits at most
 * the check timeout and never fails for a vendor outage. Returns whether the link was verified now.
 */
export async function linkExisting(ctx: OperationContext, target: { kind: string; id: string }, link: ExistingLink): Promise<boolean> {
  const check = await askVendor(link.exists);
  if (check.answered && !check.value) throw new errors.ValidationError([{ field: link.field, message: link.missing }]);
  if (!check.answered) await provisioning(ctx.services).add(ctx, target, { step: link.verifyStep, payload: { reason: check.reason } });
  return check.answered;
}

/** The verify step's work: a missing thing fails the step at once; an unreachable vendor is retried. */
export async function verifyExisting(exists: () => Promise<boolean>, missing: string): Promise<void> {
  if (!(await vendorStep(exists))) throw new StepFailedError(missing);
}
