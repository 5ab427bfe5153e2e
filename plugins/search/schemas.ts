import { schemas, Type } from '../../core/public.ts';

export const MAX_QUERY_LENGTH = 256;

const syntax = 'Web-search syntax: words all match (English stemming: "assays" finds "assay"; names also as written), ' +
  '"quoted words" match as a phrase, `or` between words gives alternatives, `-word` excludes. A code (STUDY-0142) or the ' +
  'start of one (STUDY-01) finds the records whose codes match, ignoring case; an exact code comes first.';

const text = (description: string) => Type.String({ minLength: 1, maxLength: MAX_QUERY_LENGTH, description });

/** `types`: kinds, repeatable or comma-separated; the schema lists the kinds the deployment has. */
const types = (kinds: string[]) => Type.Array(Type.String(), {
  description: `Kinds of record to search, repeatable or comma-separated: ${kinds.join(', ')}. Omitted: every kind.`,
});

const archived = Type.Boolean({ default: false, description: 'true: archived records too (a record is archived with its project, study or assay)' });

/** `GET /search`: the REST query string. */
export function searchQuery(kinds: string[]) {
  return Type.Object({
    q: text(`What to look for, at most ${MAX_QUERY_LENGTH} characters. ${syntax}`),
    types: Type.Optional(types(kinds)),
    archived: Type.Optional(archived),
  });
}

/** The `search` tool's arguments: the REST parameters, `q` called `query`. */
export function searchToolParams(kinds: string[]) {
  return Type.Object({
    query: text(`What to look for, at most ${MAX_QUERY_LENGTH} characters. ${syntax}`),
    types: Type.Optional(types(kinds)),
    archived: Type.Optional(archived),
  });
}

const id = (what: string) => schemas.Nullable(schemas.Uuid({ description: what }));

export function searchHitSchema(kinds: string[]) {
  return Type.Object({
    type: schemas.StringEnum(kinds, { description: 'The kind of record; fetch it with the get operation of its kind' }),
    id: schemas.Uuid(),
    code: schemas.Nullable(Type.String({ description: 'The record\'s code, where its kind has one' })),
    title: Type.String({ description: 'Its name; a note\'s first line; a task\'s or link\'s label' }),
    snippet: Type.String({
      description: 'A passage of the record\'s own text with the matched words in <mark>…</mark>; the rest of the text is HTML-escaped',
    }),
    projectId: id('The project it is in (null for a project, and for organization notes)'),
    studyId: id('The study it is in, if any (null for a study itself)'),
    assayId: id('The assay it is in, if any (null for an assay itself)'),
    score: Type.Number({ description: 'Higher is better: an exact code 2 and more, a code prefix 1 and more, words below 1' }),
  }, { title: 'SearchHit' });
}
