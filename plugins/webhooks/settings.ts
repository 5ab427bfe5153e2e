/**
 * The plugin's settings (README, "Settings"), read from `config.settings` in `setup`: a bad
 * value stops start-up with one line naming the variable.
 */
export interface WebhookSettings {
  /** Seconds to wait before each retry; a delivery failing once more than there are delays is FAILED. */
  retryDelays: number[];
  /** `http:` and `https:` to private and loopback addresses (on-premise receivers, tests). */
  allowPrivate: boolean;
}

export const DEFAULT_RETRY_DELAYS = '5,300,1800,7200,18000,36000,36000';
/** A retry further off than 30 days would outlive the delivery log. */
const LONGEST_DELAY = 30 * 24 * 3600;

export function readSettings(settings: Readonly<Record<string, string>>): WebhookSettings {
  return {
    retryDelays: retryDelays(settings.LABDATA_WEBHOOK_RETRY_DELAYS ?? DEFAULT_RETRY_DELAYS),
    allowPrivate: flag('LABDATA_WEBHOOK_ALLOW_PRIVATE', settings.LABDATA_WEBHOOK_ALLOW_PRIVATE),
  };
}

function retryDelays(value: string): number[] {
  const parts = value.split(',').map((p) => p.trim());
  // Decimal seconds, so that tests can retry within a fraction of a second.
  const delays = parts.map((p) => (/^\d+(\.\d+)?$/.test(p) ? Number(p) : NaN));
  if (!parts.length || delays.some((d) => !Number.isFinite(d) || d > LONGEST_DELAY)) {
    throw new Error(`LABDATA_WEBHOOK_RETRY_DELAYS must be seconds separated by commas, each at most ${LONGEST_DELAY} (e.g. ${DEFAULT_RETRY_DELAYS}); got "${value}"`);
  }
  return delays;
}

/** As the server's own boolean settings: true/false, 1/0, yes/no, any case. */
function flag(name: string, value: string | undefined): boolean {
  if (value === undefined || value === '') return false;
  const v = value.trim().toLowerCase();
  if (['true', '1', 'yes'].includes(v)) return true;
  if (['false', '0', 'no'].includes(v)) return false;
  throw new Error(`${name} must be true or false; got "${value}"`);
}
