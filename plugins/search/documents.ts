import crypto from 'node:crypto';
import type { db } from '../../core/public.ts';

/** A weight of ts_rank: A counts most (names, codes), D least. */
export type SearchWeight = 'A' | 'B' | 'C' | 'D';

/**
 * What of a plugin's records is searchable: its table, its words and how a record is seen.
 * Every `sql` is an expression over the table's alias (and `joins`), written by the owning plugin.
 */
export interface SearchSource {
  /** The kind hits name (`study`) and `types` selects; lower case, unique in the deployment. */
  kind: string;
  /** The table, its alias in the expressions below, and further joins (`join note_version v on ...`). */
  table: string;
  alias: string;
  joins?: string;
  /** Which rows are searchable (default: all), e.g. `not n.archived`. */
  where?: string;
  /** Other tables of the same plugin whose changes change a record's words: `key` names the record's id in them. */
  watch?: { table: string; key: string }[];
  /** The words, each with its weight; `names: true` indexes them as plain words too (`simple`: no stemming, no stop words). */
  fields: { sql: string; weight: SearchWeight; names?: boolean }[];
  /** The record's code, matched exactly and by prefix (case-insensitive), and indexed as a plain word. */
  code?: string;
  /** What a hit shows as its title (the name, a first line ...). */
  title: string;
  /**
   * The record it sits in (SQL giving that record's id): the record is seen as that one is (its
   * project's visibility), belongs to its project, study and assay, and is archived with it.
   */
  parent?: string;
  /**
   * Its own visibility when it has no parent: `PUBLIC`, `PROTECTED` or `PRIVATE` (a project's
   * rules: PRIVATE shows to its members), or `ORGANIZATION` (every member of the organization).
   */
  visibility?: string;
  /** Whether the record itself is archived (default: never). */
  archived?: string;
}

// Plain names; `labdata_` is the prefix of the names the generated SQL gives its own aliases.
const NAME = /^(?!labdata_)[a-z][a-z0-9_]*$/;

/** The kinds whose ids a hit reports as `projectId`, `studyId`, `assayId`. */
export const ANCESTOR_KINDS = ['project', 'study', 'assay'] as const;

export function checkSource(source: SearchSource): void {
  for (const name of [source.kind, source.table, source.alias, ...(source.watch ?? []).flatMap((w) => [w.table, w.key])]) {
    if (!NAME.test(name)) throw new Error(`search source ${source.kind}: "${name}" is not a plain SQL name`);
  }
  if (!source.fields.length && !source.code) throw new Error(`search source ${source.kind}: no field and no code to search`);
}

const vector = (config: 'english' | 'simple', sql: string, weight: SearchWeight) =>
  `setweight(to_tsvector('${config}'::regconfig, coalesce(${sql}, '')), '${weight}')`;

/**
 * The record's document vector: every field stemmed (English), names and the code also as plain
 * words, each with its weight. Concatenation shifts positions, so a phrase matches within one part.
 */
export function vectorSql(s: SearchSource): string {
  const parts = s.code ? [vector('simple', s.code, 'A')] : [];
  for (const f of s.fields) {
    parts.push(vector('english', f.sql, f.weight));
    if (f.names) parts.push(vector('simple', f.sql, f.weight));
  }
  return parts.join(' || ');
}

/** The text a snippet is cut from: the fields, in order, as one text. */
export function bodySql(s: SearchSource): string {
  return s.fields.length ? `concat_ws(' · ', ${s.fields.map((f) => f.sql).join(', ')})` : `''`;
}

/** `from <table> <alias> <joins> where <where>`, optionally narrowed by `extra`. */
export function fromSql(s: SearchSource, extra?: string): string {
  const conditions = [s.where, extra].filter(Boolean).map((c) => `(${c})`);
  return `from ${s.table} ${s.alias} ${s.joins ?? ''} where ${conditions.length ? conditions.join(' and ') : 'true'}`;
}

/**
 * `insert ... on conflict` of the documents of the records matching `condition` (SQL over the
 * alias; all when omitted, at most `limit`): the record's own columns, its place (project, study,
 * assay), visibility and archived from its parent's document. A document that did not change is
 * not written (no new row version, no index entry).
 */
export function upsertSql(s: SearchSource, condition?: string, limit?: number): string {
  return `${insertSql(s, condition, limit)}
    on conflict (id) do update set parent_id = excluded.parent_id, project_id = excluded.project_id, study_id = excluded.study_id,
      assay_id = excluded.assay_id, visibility = excluded.visibility, own_archived = excluded.own_archived,
      archived = excluded.archived, code = excluded.code, tsv = excluded.tsv
    where (labdata_doc.parent_id, labdata_doc.project_id, labdata_doc.study_id, labdata_doc.assay_id, labdata_doc.visibility,
        labdata_doc.own_archived, labdata_doc.archived, labdata_doc.code, labdata_doc.tsv)
      is distinct from (excluded.parent_id, excluded.project_id, excluded.study_id, excluded.assay_id, excluded.visibility,
        excluded.own_archived, excluded.archived, excluded.code, excluded.tsv)`;
}

/** The `insert ... select` of `upsertSql`, without its conflict clause. */
function insertSql(s: SearchSource, condition?: string, limit?: number): string {
  const a = s.alias;
  const own = (kind: string) => (s.kind === kind ? 'r.id' : `par.${kind}_id`);
  const select = `select ${a}.id, ${a}.organization_id, ${s.parent ?? 'null::uuid'} as parent_id,
      ${s.visibility ?? 'null::text'} as visibility, coalesce(${s.archived ?? 'false'}, false) as archived,
      ${s.code ? `nullif(btrim(${s.code}), '')` : 'null::text'} as code, ${vectorSql(s)} as tsv
    ${fromSql(s, condition)}${limit ? ` limit ${limit}` : ''}`;
  // The source's expressions stand alone in the inner select: the outer aliases cannot capture them.
  return `insert into search_document as labdata_doc
      (id, kind, organization_id, parent_id, project_id, study_id, assay_id, visibility, own_archived, archived, code, tsv)
    select r.id, '${s.kind}', r.organization_id, r.parent_id, ${ANCESTOR_KINDS.map(own).join(', ')},
      case when r.parent_id is null then r.visibility else par.visibility end, r.archived, r.archived or coalesce(par.archived, false), r.code, r.tsv
    from (${select}) r left join search_document par on par.id = r.parent_id`;
}

/** Deletes the documents among `ids` (an array) whose record is gone or no longer searchable. */
export function deleteSql(s: SearchSource, ids: string): string {
  return `delete from search_document labdata_doc where labdata_doc.id = any(${ids}) and labdata_doc.kind = '${s.kind}'
      and not exists (select 1 ${fromSql(s, `${s.alias}.id = labdata_doc.id`)})`;
}

const fn = (s: SearchSource, table: string) => `labdata_search_${s.kind}__${table}`;

/**
 * The statement-level trigger function of one table of the source: the records a statement
 * touched (from its transition tables) have their documents recomputed, once per statement
 * whatever the number of rows: a bulk `INSERT ... SELECT` costs one pass, not a query per row.
 * The ids go through an array so that the cached plan probes indexes by id whatever the size the
 * first statement of the session had (a plan made for a big transition table would otherwise
 * read whole tables for every later one-row write).
 */
function triggerFunctionSql(s: SearchSource, table: string, key: string): string {
  const byId = `${s.alias}.id = any(labdata_ids)`;
  // New records have no document yet: a plain insert, not the upsert, whose DO UPDATE fires the
  // update triggers of search_document even when it updates nothing. A document already there
  // (a record inserted again under its id after a load with the triggers off) or a record that is
  // not searchable leaves rows uninserted: then the upsert does it all, as before.
  const inserted = table === s.table
    ? `${insertSql(s, byId)} on conflict (id) do nothing;
        get diagnostics labdata_n = row_count;
        if labdata_n < cardinality(labdata_ids) then ${upsertSql(s, byId)}; end if`
    : upsertSql(s, byId);
  return `create or replace function ${fn(s, table)}() returns trigger language plpgsql as $trigger$
    declare labdata_ids uuid[]; labdata_n bigint;
    begin
      if tg_op = 'INSERT' then
        labdata_ids := array(select distinct ${key} from labdata_new);
        if cardinality(labdata_ids) > 0 then ${inserted}; end if;
      elsif tg_op = 'UPDATE' then
        labdata_ids := array(select ${key} from labdata_old union select ${key} from labdata_new);
        if cardinality(labdata_ids) > 0 then
          ${deleteSql(s, 'labdata_ids')};
          ${upsertSql(s, byId)};
        end if;
      else
        labdata_ids := array(select distinct ${key} from labdata_old);
        ${deleteSql(s, 'labdata_ids')};
      end if;
      return null;
    end $trigger$`;
}

function triggersSql(s: SearchSource, table: string): string[] {
  const name = (op: string) => `search_${s.kind}_${op}`;
  const create = (op: string, event: string, referencing: string) =>
    `create trigger ${name(op)} after ${event} on ${table} referencing ${referencing} for each statement execute function ${fn(s, table)}()`;
  return [
    ...['ins', 'upd', 'del'].map((op) => `drop trigger if exists ${name(op)} on ${table}`),
    create('ins', 'insert', 'new table as labdata_new'),
    create('upd', 'update', 'old table as labdata_old new table as labdata_new'),
    create('del', 'delete', 'old table as labdata_old'),
  ];
}

/**
 * The migration that makes a source searchable, for its owner's migration list (last in it: it
 * reads the table as the earlier migrations leave it). It defines `labdata_search_attach_<kind>()`,
 * which installs the triggers and indexes the records already there, and runs it when the search
 * plugin's table exists; otherwise the search plugin's first migration runs it, whichever comes
 * first. So a deployment without the search plugin carries no trigger, and the order of the plugins
 * does not matter. The name carries a hash of the SQL: a changed declaration is a new migration
 * (an applied one never changes), which installs the new triggers and re-indexes the kind.
 */
export function sourceMigration(plugin: string, s: SearchSource): db.MigrationDefinition {
  checkSource(s);
  const tables = [{ table: s.table, key: 'id' }, ...(s.watch ?? [])];
  const body = [
    ...tables.flatMap((t) => [triggerFunctionSql(s, t.table, t.key), ...triggersSql(s, t.table)]),
    `delete from search_document where kind = '${s.kind}'`,
    upsertSql(s),
  ].join(';\n');
  const sql = [
    `create or replace function labdata_search_attach_${s.kind}() returns void language plpgsql as $attach$
    begin
    ${body};
    end $attach$`,
    `do $$ begin if to_regclass('search_document') is not null then perform labdata_search_attach_${s.kind}(); end if; end $$`,
  ];
  const hash = crypto.createHash('sha256').update(sql.join('\n')).digest('hex').slice(0, 10);
  return { name: `${plugin}-search-${s.kind}-${hash}`, sql };
}

/**
 * `labdata recount`'s part (rows loaded with triggers off): the documents of records that have
 * none, and documents whose record is gone, a batch per statement; parents' kinds first.
 */
export function repairSql(s: SearchSource): string[] {
  const orphans = `select labdata_doc.id from search_document labdata_doc where labdata_doc.kind = '${s.kind}'
      and not exists (select 1 ${fromSql(s, `${s.alias}.id = labdata_doc.id`)}) limit 20000`;
  return [
    upsertSql(s, `not exists (select 1 from search_document labdata_doc where labdata_doc.id = ${s.alias}.id)`, 20000),
    `delete from search_document where id in (${orphans})`,
  ];
}
