/** Deployment settings, read once from the environment by app/config.ts (see docs/configuration.md). */
export interface Config {
  databaseUrl: string | undefined;
  dataDir: string;
  host: string;
  port: number;
  tlsCertFile: string | undefined;
  tlsKeyFile: string | undefined;
  trustProxy: boolean;
  /** Plugin names or module specifiers; undefined means every built-in plugin. */
  plugins: string[] | undefined;
  enterprise: boolean;
  /** Extra host names accepted by the MCP DNS-rebinding check besides localhost. */
  mcpAllowedHosts: string[];
  /** LABDATA_PUBLIC_URL: the address clients use (behind a proxy); its host is allowed on /mcp. */
  publicUrl: string | undefined;
  /** LABDATA_METRICS_ORGANIZATIONS: organization ids whose admins may read /metrics (empty: any admin). */
  metricsOrganizations: string[];
  logLevel: string;
  /** LABDATA_SECRET_KEY: 32 bytes (base64 or hex) sealing stored credentials; unset: `<dataDir>/secret.key`. */
  secretKey: string | undefined;
  /** LABDATA_JOB_CONCURRENCY: most background jobs (provisioning) running at once per process. */
  jobConcurrency: number;
  /** LABDATA_RATE_LIMIT_PER_MINUTE: requests per API key and minute on one instance; 0 turns the limit off. */
  rateLimitPerMinute: number;
  /** LABDATA_VENDOR_ALLOW_LINK_LOCAL: vendor URLs may name link-local and cloud metadata addresses (off by default). */
  vendorAllowLinkLocal: boolean;
  /** Every LABDATA_* variable as set: a plugin reads its own (e.g. LABDATA_WEBHOOK_RETRY_DELAYS) in setup, throwing on a bad one. */
  settings: Readonly<Record<string, string>>;
}
