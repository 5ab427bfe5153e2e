/**
 * The web-search syntax of `q`, as PostgreSQL's websearch_to_tsquery reads it: words and
 * "quoted phrases" must all appear, `-word` or `-"a phrase"` must not, and `or` between two items
 * makes alternatives of what stands on either side (`a b or c` is `(a and b) or c`). The items go
 * to labdata_search_tsquery (migrations.ts), which stems each of them both ways; websearch_to_tsquery
 * itself cannot, as one configuration reads the whole text.
 */
export interface QueryItem {
  term: string;
  negated: boolean;
  /** 1, 2, ...: the alternative (`or`) the item belongs to. */
  grp: number;
}

export function parseQuery(q: string): QueryItem[] {
  const items: QueryItem[] = [];
  let group = 1;
  let pendingOr = false;
  const re = /(-?)(?:"([^"]*)"?|([^\s"]+))/g;
  for (const m of q.matchAll(re)) {
    const negated = m[1] === '-';
    const phrase = m[2];
    const word = m[3];
    if (phrase === undefined && !negated && word.toLowerCase() === 'or') {
      // An `or` counts between two items only (leading, trailing and repeated ones are ignored).
      pendingOr = items.length > 0;
      continue;
    }
    const text = (phrase ?? word).trim();
    if (!text) continue;
    if (pendingOr && items.at(-1)?.grp === group) group += 1;
    pendingOr = false;
    items.push({ term: text, negated, grp: group });
  }
  return items;
}

/**
 * The text a code match looks for: the whole query, when it is one word (quotes around it
 * removed), lower-cased by the database as the index is. Undefined when `q` is several words.
 */
export function codeOf(q: string): string | undefined {
  const bare = q.trim().replace(/^"(.*)"$/s, '$1').trim();
  return bare && !/\s/.test(bare) ? bare : undefined;
}
