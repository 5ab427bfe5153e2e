/** A UUID in its text form (any case, no `urn:uuid:` prefix): the one id syntax of the API, the CLI and the settings. */
export const isUuid = (v: unknown): v is string => typeof v === 'string' && /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(v);

/** "a study", "an assay", "an organization": descriptions built from a record kind read right. */
export function withArticle(noun: string): string {
  // "a user", "a unit": a leading u often sounds like "you".
  return `${/^([aeio]|u(?!s|ni))/i.test(noun) ? 'an' : 'a'} ${noun}`;
}
