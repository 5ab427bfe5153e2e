/**
 * URLs as they may be logged: values of query parameters whose names look secret, and anything
 * shaped like an API key anywhere in the URL, are replaced. A caller who puts a key in the query
 * string (`?apiKey=…`) must not find it in the logs.
 */
const SECRET_NAME = /(^|[-_.])(api[-_]?key|key|token|access[-_]?token|refresh[-_]?token|id[-_]?token|password|passwd|pwd|pass|secret|client[-_]?secret|auth|authorization|bearer|credentials?|signature|sig|session|sessionid|cookie|code)$/i;
const SECRET_WORD = /api[-_]?key|token|passw|secret|credential|bearer|authoriz|signature|session|cookie/i;
/** The API key format (`key_<keyId>.<secret>`), leniently: a mistyped key is still a secret. */
const KEY_SHAPE = /key_([a-z2-7]{20})(\.|%2e)[A-Za-z0-9_\-%]+/gi;
export const REDACTED = '[REDACTED]';

/** Whether a query parameter (or field) name looks like it carries a secret. */
export function isSecretName(name: string): boolean {
  return SECRET_NAME.test(name) || SECRET_WORD.test(name);
}

function decode(value: string): string {
  try {
    return decodeURIComponent(value.replace(/\+/g, ' '));
  } catch {
    return value;
  }
}

/** `url` (path and query, or absolute) with secret-looking values replaced; the rest kept as sent. */
export function redactUrl(url: string): string {
  // The key id is not secret (logs name it); the part after the dot is.
  const masked = url.replace(KEY_SHAPE, (_m, keyId: string) => `key_${keyId}.${REDACTED}`);
  const q = masked.indexOf('?');
  if (q < 0) return masked;
  const hash = masked.indexOf('#', q);
  const query = masked.slice(q + 1, hash < 0 ? undefined : hash);
  const redacted = query
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      if (eq < 0) return pair;
      const name = decode(pair.slice(0, eq));
      return isSecretName(name) ? `${pair.slice(0, eq)}=${REDACTED}` : pair;
    })
    .join('&');
  return masked.slice(0, q + 1) + redacted + (hash < 0 ? '' : masked.slice(hash));
}
