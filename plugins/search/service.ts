import { db, errors, type OperationContext, type PageRequest, type PageResult, raw, type Sql, sql } from '../../core/public.ts';
import { bodySql, fromSql, type SearchSource } from './documents.ts';
import { codeOf, parseQuery } from './query.ts';
import { MAX_QUERY_LENGTH } from './schemas.ts';

export interface SearchInput {
  /** REST `q`; the tool's `query`. */
  q?: string;
  query?: string;
  types?: string[];
  archived?: boolean;
}

export interface SearchHit {
  type: string;
  id: string;
  code: string | null;
  title: string;
  snippet: string;
  projectId: string | null;
  studyId: string | null;
  assayId: string | null;
  score: number;
}

interface Row {
  total: string;
  id: string | null;
  kind: string;
  code: string | null;
  title: string | null;
  snippet: string | null;
  /** The snippet is the start of the text, to cut to its first words. */
  startOnly: boolean | null;
  projectId: string | null;
  studyId: string | null;
  assayId: string | null;
  score: number;
}

/** A page of hits is ordered by score, ties by id (stable pages); `sort` may only turn it round. */
export const searchSort = { fields: { score: 'h.score' }, default: ['score,desc'], tiebreaker: 'h.id' };

// Marks ts_headline puts around matched words: private-use characters, turned into <mark> once
// the text around them is HTML-escaped (a record's own `<` must not become markup).
const START = '\uE000';
const STOP = '\uE001';
const HEADLINE = `StartSel=${START}, StopSel=${STOP}, MaxWords=30, MinWords=12, ShortWord=2, MaxFragments=2, FragmentDelimiter=" … "`;
// ts_headline reads the whole text: a long note is cut from its first 20,000 characters.
const SNIPPET_SOURCE = 20000;
// A hit by its code alone (no word matched) shows its text's first 30 words, read from this many
// characters, with no ts_headline: there is nothing to mark, and a headline parses the whole text.
// The words are split here, not in SQL: a regular expression per hit cost the database half of a
// code search's time, where the service's core has room.
const SNIPPET_START = 600;
const START_WORDS = 30;
const firstWords = (s: string) => s.split(/\s+/).filter(Boolean).slice(0, START_WORDS).join(' ');
const LIMIT_BUCKETS = [20, 50, 100, 200];
// An exact code counts 2, a code prefix 1, a code containing the query (3 characters or more) 0.5,
// beside a rank of words in [0, 1) (ts_rank normalized).
const CODE_TIER = raw(`case when lower(d.code) = q.code then 2 when starts_with(lower(d.code), q.code) then 1
  when q.infix is not null and strpos(lower(d.code), q.code) > 0 then 0.5 else 0 end`);

const escapeHtml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
// ts_headline leaves a space where it drops a tag (`<b>`): runs of white space become one.
const marked = (s: string) => escapeHtml(s.replace(/\s+/g, ' ').trim()).replaceAll(START, '<mark>').replaceAll(STOP, '</mark>');

/**
 * The search: one statement, one pass over the matching documents (plugins/search/README.md,
 * "How a search runs"). Words through the GIN index, codes through the code index; permissions
 * on the document row itself (its project's visibility and the caller's PRIVATE grants, as the
 * lists decide them); every visible match counted (exact total) and ranked; then, for the page
 * only, title and snippet from the record's own table.
 */
export class SearchService {
  readonly #sources: SearchSource[];
  readonly #kinds: string[];
  #texts?: Sql;

  constructor(sources: SearchSource[]) {
    this.#sources = sources;
    this.#kinds = sources.map((s) => s.kind);
  }

  get kinds(): string[] {
    return this.#kinds;
  }

  /** Title and text of the page's records, from their own tables (one union, one index probe per hit). */
  get #pageTexts(): Sql {
    // Lateral and `offset 0` (not flattened into a join): one probe by id per hit of the page,
    // never a join with the whole table; only in its own kind's table (not one per source).
    return (this.#texts ??= raw(this.#sources
      .map((s) => `select labdata_text.* from page labdata_hit cross join lateral (select ${s.alias}.id, (${s.title})::text as title,
          left(${bodySql(s)}, ${SNIPPET_SOURCE}) as body ${fromSql(s, `${s.alias}.id = labdata_hit.id`)} offset 0) labdata_text
          where labdata_hit.kind = '${s.kind}'`)
      .join(' union all ')));
  }

  #types(values: string[] | undefined): string[] {
    const list = (values ?? []).flatMap((v) => v.split(',')).map((v) => v.trim().toLowerCase()).filter(Boolean);
    const unknown = list.find((v) => !this.#kinds.includes(v));
    if (unknown !== undefined) {
      throw new errors.ValidationError([{ field: 'types', message: `unknown type "${unknown}"; one of ${this.#kinds.join(', ')}` }]);
    }
    return list.length ? [...new Set(list)] : this.#kinds;
  }

  async search(ctx: OperationContext, input: SearchInput, page: PageRequest): Promise<PageResult<SearchHit>> {
    const field = input.q === undefined && input.query !== undefined ? 'query' : 'q';
    const text = (input.q ?? input.query ?? '').trim();
    if (!text) throw new errors.ValidationError([{ field, message: 'must not be blank' }]);
    if (text.length > MAX_QUERY_LENGTH) throw new errors.ValidationError([{ field, message: `must be at most ${MAX_QUERY_LENGTH} characters` }]);
    const types = this.#types(input.types);
    const items = parseQuery(text);
    const json = JSON.stringify(items);
    // The query for ts_rank leaves out the excluded words: without any, it is the search's own.
    const negated = items.some((i) => i.negated);
    const { actor, services } = ctx;
    const open = raw(`d.visibility in ('PUBLIC', 'PROTECTED', 'ORGANIZATION')`);
    const scope = sql`d.organization_id = ${actor.organizationId} and d.kind in (${types}) and (${input.archived ?? false}::boolean or not d.archived)`;
    // Words can match thousands of documents: the caller's PRIVATE grants are read once, hashed.
    // Codes match a few: a probe per PRIVATE match, not a read of every grant the caller has.
    const where = actor.isAdmin ? scope : sql`${scope} and (${open} or d.project_id in (${services.permissions.privateProjects(actor)}))`;
    const whereCode = actor.isAdmin ? scope : sql`${scope} and (${open} or ${services.permissions.isMember(actor, raw('d.project_id'))})`;
    const bucket = LIMIT_BUCKETS.find((b) => b >= page.size) ?? page.size;
    const rows = await db.query<Row>(ctx.em, sql`
      with q as materialized (
        select x.*, case when length(x.code) >= 3
                         then '%' || replace(replace(replace(x.code, '\\', '\\\\'), '%', '\\%'), '_', '\\_') || '%' end as infix
          from (select t.tq, case when ${negated}::boolean then labdata_search_tsquery(${json}::jsonb, true) else t.tq end as rq,
                       lower(${codeOf(text) ?? null}::text) as code
                  from (select labdata_search_tsquery(${json}::jsonb) as tq offset 0) t) x),
      prefixed as materialized (
        select d.id, d.kind, (${CODE_TIER})::float8 as score, false as words
          from q cross join search_document d
         where d.code is not null and lower(d.code) ~>=~ q.code and lower(d.code) ~<~ (q.code || chr(1114111))
           and ${whereCode} and not coalesce(d.tsv @@ q.tq, false)),
      hits as materialized (
        select d.id, d.kind, (ts_rank(d.tsv, q.rq, 32) + ${CODE_TIER})::float8 as score, true as words
          from q cross join search_document d
         where d.tsv @@ q.tq and ${where}
        union all
        select * from prefixed
        union all
        -- Parts of codes only when no visible code starts with q: a prefix such as STUDY-01 has
        -- trigrams that every study's code has, which the trigram index would intersect in vain.
        select d.id, d.kind, (${CODE_TIER})::float8, false
          from q cross join search_document d
         where not exists (select 1 from prefixed) and d.code is not null and lower(d.code) like q.infix
           and not starts_with(lower(d.code), q.code) and ${whereCode} and not coalesce(d.tsv @@ q.tq, false)),
      page as materialized (
        select s.*, row_number() over () as n from (select h.id, h.kind, h.score, h.words from hits h order by ${page.orderBy} limit ${raw(String(bucket))} offset ${page.offset}) s),
      texts as (${this.#pageTexts})
      select t.total, p.id, d.kind, d.code, x.title, p.score,
             case when d.kind = 'project' then null else d.project_id end as "projectId",
             case when d.kind = 'study' then null else d.study_id end as "studyId",
             case when d.kind = 'assay' then null else d.assay_id end as "assayId",
             e.start as "startOnly",
             case when e.start then left(x.body, ${SNIPPET_START})
                  when strpos(e.snippet, ${START}) > 0 then e.snippet
                  else ts_headline('simple', x.body, q.rq, ${HEADLINE}) end as snippet
        from (select count(*) as total from hits) t
        cross join q
        left join page p on true
        left join search_document d on d.id = p.id
        left join texts x on x.id = p.id
        left join lateral (select q.rq is null or not p.words as start,
          case when p.words then ts_headline('english', x.body, q.rq, ${HEADLINE}) end as snippet) e on true
       order by p.n`);
    const total = Number(rows[0]?.total ?? 0);
    const items_ = rows.filter((r) => r.id !== null).slice(0, page.size).map((r): SearchHit => ({
      type: r.kind,
      id: r.id!,
      code: r.code,
      title: r.title ?? '',
      snippet: marked(r.startOnly ? firstWords(r.snippet ?? '') : (r.snippet ?? '')),
      projectId: r.projectId,
      studyId: r.studyId,
      assayId: r.assayId,
      score: Math.round(r.score * 1e6) / 1e6,
    }));
    return { items: items_, total };
  }
}
