/**
 * Which connection settings are shown and which are secrets (sealed with the kernel's
 * `services.secrets`): shared by the plugins that store vendor or drive credentials.
 */

/**
 * Splits connection settings by an allow-list: the fields a kind declares public (shown to every
 * member) and all the others, which are secrets (sealed, never returned nor logged). An
 * allow-list rather than a deny-list of secret-looking names, so `pass`, `bearer`,
 * `authorization` or a name nobody thought of are secrets too.
 */
export function splitSecretFields(values: Record<string, unknown>, publicFields: readonly string[]) {
  const shown: Record<string, unknown> = {};
  const secret: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(values)) (publicFields.includes(name) ? shown : secret)[name] = value;
  return { shown, secret };
}

/** Only the declared public fields: what a response may show of stored settings (rows stored before the rule included). */
export function publicFields(values: Record<string, unknown> | null | undefined, fields: readonly string[]): Record<string, unknown> {
  return splitSecretFields(values ?? {}, fields).shown;
}
