import { isIP } from 'node:net';
import path from 'node:path';
import { isUuid } from '../core/text.ts';
import type { Config } from '../core/config.ts';

// The environment variables of the contract (docs/configuration.md), read into the kernel's Config.

export class ConfigError extends Error {}

/** Parses a 32-byte key given as base64 (44 chars), base64url or hex (64 chars). */
export function parseSecretKey(value: string, source = 'LABDATA_SECRET_KEY'): Buffer {
  const text = value.trim();
  const key = /^[0-9a-f]{64}$/i.test(text) ? Buffer.from(text, 'hex') : Buffer.from(text, text.includes('-') || text.includes('_') ? 'base64url' : 'base64');
  if (key.length !== 32) throw new ConfigError(`${source} must be 32 bytes as base64 or hex (e.g. \`openssl rand -base64 32\`)`);
  return key;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
/** A host name or IP address, optionally with a port or as a URL (how /mcp's host check reads it). */
function isHost(value: string): boolean {
  // No wildcards: names are compared exactly.
  if (value.includes('*')) return false;
  if (isIP(value.replace(/^\[|\]$/g, ''))) return true;
  try {
    return new URL(value.includes('://') ? value : `http://${value}`).hostname !== '';
  } catch {
    return false;
  }
}

/** A comma-separated list whose every item must match `item`, else a one-line error naming the bad one. */
function checkedList(name: string, value: string | undefined, valid: (item: string) => boolean, what: string): string[] {
  const items = list(value) ?? [];
  const bad = items.find((entry) => !valid(entry));
  if (bad !== undefined) throw new ConfigError(`${name} must be comma-separated ${what}, got "${bad}"`);
  return items;
}

function bool(name: string, value: string | undefined, fallback: boolean): boolean {
  if (value === undefined || value === '') return fallback;
  if (/^(true|1|yes)$/i.test(value)) return true;
  if (/^(false|0|no)$/i.test(value)) return false;
  throw new ConfigError(`${name} must be true or false (or 1/0, yes/no), got "${value}"`);
}

function list(value: string | undefined): string[] | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  return value.split(',').map((s) => s.trim()).filter(Boolean);
}

function publicUrl(value: string | undefined): string | undefined {
  if (!value) return undefined;
  try {
    const url = new URL(value);
    if (url.protocol === 'https:' || url.protocol === 'http:') return url.origin;
  } catch {
    // reported below
  }
  throw new ConfigError(`LABDATA_PUBLIC_URL must be an absolute URL such as https://labdata.example.com, got "${value}"`);
}

/** Decimal digits (surrounding spaces aside), else NaN: `Number` would also take `0x1F`, `1e3` and `7.0`. */
function wholeNumber(value: string | undefined, fallback: number): number {
  if (value === undefined || value.trim() === '') return fallback;
  return /^\s*[0-9]+\s*$/.test(value) ? Number(value) : NaN;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const port = wholeNumber(env.LABDATA_PORT, 8443);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new ConfigError(`LABDATA_PORT must be a port number, got "${env.LABDATA_PORT}"`);
  }
  const rateLimit = wholeNumber(env.LABDATA_RATE_LIMIT_PER_MINUTE, 1200);
  if (!Number.isInteger(rateLimit) || rateLimit < 0) {
    throw new ConfigError(`LABDATA_RATE_LIMIT_PER_MINUTE must be a whole number (0 turns the limit off), got "${env.LABDATA_RATE_LIMIT_PER_MINUTE}"`);
  }
  const certFile = env.LABDATA_TLS_CERT || undefined;
  const keyFile = env.LABDATA_TLS_KEY || undefined;
  if (Boolean(certFile) !== Boolean(keyFile)) {
    throw new ConfigError('LABDATA_TLS_CERT and LABDATA_TLS_KEY must be set together');
  }
  const jobConcurrency = wholeNumber(env.LABDATA_JOB_CONCURRENCY, 8);
  if (!Number.isInteger(jobConcurrency) || jobConcurrency < 1 || jobConcurrency > 256) {
    throw new ConfigError(`LABDATA_JOB_CONCURRENCY must be a whole number from 1 to 256, got "${env.LABDATA_JOB_CONCURRENCY}"`);
  }
  const logLevel = (env.LABDATA_LOG_LEVEL || 'info').trim().toLowerCase();
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError(`LABDATA_LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${env.LABDATA_LOG_LEVEL}"`);
  }
  // Checked here, so that a malformed key stops start-up in one line before anything else runs.
  if (env.LABDATA_SECRET_KEY) parseSecretKey(env.LABDATA_SECRET_KEY);
  databaseTopology(env);
  return {
    databaseUrl: env.LABDATA_DATABASE_URL || undefined,
    dataDir: path.resolve(env.LABDATA_DATA_DIR || './.data'),
    host: env.LABDATA_HOST || '127.0.0.1',
    port,
    tlsCertFile: certFile,
    tlsKeyFile: keyFile,
    trustProxy: bool('LABDATA_TRUST_PROXY', env.LABDATA_TRUST_PROXY, false),
    plugins: list(env.LABDATA_PLUGINS),
    enterprise: bool('LABDATA_ENTERPRISE', env.LABDATA_ENTERPRISE, true),
    mcpAllowedHosts: checkedList('LABDATA_MCP_ALLOWED_HOSTS', env.LABDATA_MCP_ALLOWED_HOSTS, isHost, 'host names (no wildcards)'),
    publicUrl: publicUrl(env.LABDATA_PUBLIC_URL),
    // Ids are stored in lower case; an upper-case copy of one names the same organization.
    metricsOrganizations: checkedList('LABDATA_METRICS_ORGANIZATIONS', env.LABDATA_METRICS_ORGANIZATIONS, isUuid, 'organization ids (UUIDs)').map((id) => id.toLowerCase()),
    logLevel,
    secretKey: env.LABDATA_SECRET_KEY || undefined,
    jobConcurrency,
    rateLimitPerMinute: rateLimit,
    vendorAllowLinkLocal: bool('LABDATA_VENDOR_ALLOW_LINK_LOCAL', env.LABDATA_VENDOR_ALLOW_LINK_LOCAL, false),
    settings: Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[0].startsWith('LABDATA_') && e[1] !== undefined)),
  };
}

/*
 * Past one database server (docs/operations.md, "Replicas and poolers"): the standbys reads may
 * go to, and whether LABDATA_DATABASE_URL is a pooler in transaction mode. A deployment that sets
 * none of these runs exactly as before.
 */
export interface DatabaseTopology {
  /** LABDATA_DATABASE_READ_URLS: hot standbys of the primary, for reads. */
  readUrls: string[];
  /** LABDATA_READ_MAX_LAG_MS: a standby whose data is older than this is skipped (default 1000). */
  readMaxLagMs: number;
  /** LABDATA_DATABASE_POOLER=transaction: LABDATA_DATABASE_URL is a pooler in transaction mode. */
  pooled: boolean;
  /** LABDATA_DATABASE_DIRECT_URL: a direct connection to the primary, for session work (LISTEN, locks, jobs). */
  directUrl: string | undefined;
}

const postgresUrl = (value: string) => {
  try {
    return ['postgres:', 'postgresql:'].includes(new URL(value).protocol);
  } catch {
    return false;
  }
};

/** The topology the settings describe; a bad one is a ConfigError naming the variable (one start-up line). */
export function databaseTopology(settings: Readonly<Record<string, string | undefined>>): DatabaseTopology {
  const readUrls = (settings.LABDATA_DATABASE_READ_URLS ?? '').split(',').map((u) => u.trim()).filter(Boolean);
  const bad = readUrls.find((u) => !postgresUrl(u));
  if (bad !== undefined) throw new ConfigError(`LABDATA_DATABASE_READ_URLS must be comma-separated postgres:// URLs, got "${bad.replace(/\/\/[^@]*@/, '//…@')}"`);
  const lag = (settings.LABDATA_READ_MAX_LAG_MS ?? '').trim();
  if (lag && !/^[0-9]+$/.test(lag)) throw new ConfigError(`LABDATA_READ_MAX_LAG_MS must be a whole number of milliseconds, got "${lag}"`);
  const pooler = (settings.LABDATA_DATABASE_POOLER ?? '').trim().toLowerCase();
  if (pooler && pooler !== 'transaction') throw new ConfigError(`LABDATA_DATABASE_POOLER must be "transaction" (a pooler in transaction mode, e.g. PgBouncer), got "${settings.LABDATA_DATABASE_POOLER}"`);
  const directUrl = settings.LABDATA_DATABASE_DIRECT_URL?.trim() || undefined;
  if (directUrl && !postgresUrl(directUrl)) throw new ConfigError('LABDATA_DATABASE_DIRECT_URL must be a postgres:// URL');
  if ((pooler || readUrls.length) && !settings.LABDATA_DATABASE_URL) {
    throw new ConfigError(`${pooler ? 'LABDATA_DATABASE_POOLER' : 'LABDATA_DATABASE_READ_URLS'} needs LABDATA_DATABASE_URL (the primary${pooler ? ', through the pooler' : ''})`);
  }
  if (pooler && !directUrl) throw new ConfigError('LABDATA_DATABASE_POOLER=transaction needs LABDATA_DATABASE_DIRECT_URL: a direct connection to the primary for LISTEN, migration locks and the job queue');
  return { readUrls, readMaxLagMs: lag ? Number(lag) : 1000, pooled: pooler === 'transaction', directUrl };
}
