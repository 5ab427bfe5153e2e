/** "a study", "an assay", "an organization": descriptions built from a record kind read right. */
export function withArticle(noun: string): string {
  return `${/^[aeiou]/i.test(noun) ? 'an' : 'a'} ${noun}`;
}
