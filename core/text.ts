/** "a study", "an assay", "an organization": descriptions built from a record kind read right. */
export function withArticle(noun: string): string {
  // "a user", "a unit": a leading u often sounds like "you".
  return `${/^([aeio]|u(?!s|ni))/i.test(noun) ? 'an' : 'a'} ${noun}`;
}
