// Statement shapes (core/db/sql.ts): `query` finds a statement's prepared name by the shape of
// how it was built instead of hashing its text. Two statements that share a shape must have the
// same text, or one would run under the other's prepared statement; the same construction must
// find the same shape, or every call would prepare anew.
import t from 'tap';
import { join, raw, sql, type Sql } from '../../core/db/sql.ts';

const idOf = (n: number) => `00000000-0000-0000-0000-${String(n).padStart(12, '0')}`;

/** A small deterministic generator, so a seed builds the same fragment again. */
function random(seed: number) {
  let x = seed * 2654435761 + 1;
  return (n: number) => {
    x = (x * 1103515245 + 12345) % 2147483648;
    return x % n;
  };
}

/** Fragments built the ways the plugins build them: nested templates, lists, raw text, joins. */
function fragment(next: (n: number) => number, depth = 0): Sql {
  const leaf = () => (next(2) ? raw(`p${next(3)}.id`) : raw(''));
  if (depth > 3) return leaf();
  switch (next(9)) {
    case 0: return sql`a.id = ${idOf(next(100))}`;
    case 1: return sql`a.id in (${[...Array(1 + next(4))].map((_, i) => idOf(i))})`;
    case 2: return sql`(${fragment(next, depth + 1)} and ${fragment(next, depth + 1)})`;
    case 3: return sql`(${fragment(next, depth + 1)} or ${next(10)})`;
    case 4: return join([...Array(next(3))].map(() => fragment(next, depth + 1)), next(2) ? ', ' : ' and ');
    case 5: return leaf();
    case 6: return sql`exists (select 1 from t where ${raw(next(2) ? 'x' : 'y')} = ${'v'})`;
    case 7: return sql`${[next(10)]}`;
    default: return sql`select ${fragment(next, depth + 1)} from t`;
  }
}

t.test('a shape stands for one text only, and the same construction finds the same shape', async (t) => {
  const texts = new Map<number, string>();
  let conflicts = 0;
  let unshaped = 0;
  let unstable = 0;
  for (let seed = 0; seed < 3000; seed++) {
    const q = fragment(random(seed));
    if (!q.shape) unshaped++;
    const seen = texts.get(q.shape);
    if (seen !== undefined && seen !== q.text) conflicts++;
    texts.set(q.shape, q.text);
    if (fragment(random(seed)).shape !== q.shape) unstable++;
  }
  t.equal(conflicts, 0, 'no shape shared by two texts');
  t.equal(unshaped, 0, 'every fragment has a shape');
  t.equal(unstable, 0, 'built again, every fragment has its shape again');
  t.ok(texts.size > 500, `many distinct shapes (${texts.size})`);
});

t.test('a list of another length, a fragment of another text or raw text of another value is another shape', async (t) => {
  const list = (n: number) => sql`id in (${[...Array(n)].map((_, i) => i)})`;
  t.not(list(1).shape, list(2).shape);
  t.equal(list(2).shape, list(2).shape);
  const wrap = (inner: Sql) => sql`where ${inner}`;
  t.not(wrap(raw('a')).shape, wrap(raw('b')).shape);
  t.equal(wrap(raw('a')).shape, wrap(raw('a')).shape);
  t.not(join([raw('a'), raw('b')]).shape, join([raw('a'), raw('b')], ' and ').shape);
  t.not(join([raw('a')]).shape, join([raw('a'), raw('a')]).shape);
});
