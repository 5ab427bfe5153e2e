import type { db } from '../../core/public.ts';

// The record's place as its children inherit it: its own id in the column of its own kind.
const place = (c: string, p: string) => ['project', 'study', 'assay']
  .map((k) => `case when ${c}.kind = '${k}' then ${c}.id else ${p}.${k}_id end`).join(', ');

/**
 * Children take their place, visibility and archived from their parent's document (search-0001,
 * redefined by search-0003). `precheck`: return at once when no document has one of the
 * statement's documents as its parent — a new record has no children, and the update, even of
 * no rows, fired this statement trigger again with its transition tables (a third of what a
 * search document added to a one-row insert).
 */
function inheritFunction(verb: 'create' | 'create or replace', precheck = false): string {
  const nothingToPass = precheck
    ? `if cardinality(labdata_ids) = 0 or not exists (select 1 from search_document c where c.parent_id = any(labdata_ids)) then return null; end if;`
    : `if cardinality(labdata_ids) = 0 then return null; end if;`;
  return `${verb} function labdata_search_inherit() returns trigger language plpgsql as $$
       declare labdata_ids uuid[];
       begin
         if tg_op = 'INSERT' then
           labdata_ids := array(select id from labdata_new);
         else
           labdata_ids := array(select n.id from labdata_new n join labdata_old o on o.id = n.id
             where (n.project_id, n.study_id, n.assay_id, n.visibility, n.archived)
                   is distinct from (o.project_id, o.study_id, o.assay_id, o.visibility, o.archived));
         end if;
         ${nothingToPass}
         update search_document c
            set (project_id, study_id, assay_id, visibility, archived) = (${place('c', 'p')}, p.visibility, c.own_archived or p.archived)
           from search_document p
          where c.parent_id = any(labdata_ids) and p.id = c.parent_id
            and (c.project_id, c.study_id, c.assay_id, c.visibility, c.archived)
                is distinct from (${place('c', 'p')}, p.visibility, c.own_archived or p.archived);
         return null;
       end $$`;
}

export const migrations: db.MigrationDefinition[] = [
  {
    name: 'search-0001-init',
    sql: [
      // One document per searchable record, kept by its owner's statement-level triggers
      // (plugins/search/documents.ts) in the writing transaction. Besides its words it carries
      // where the record sits and who sees it (its project, the project's visibility, archived),
      // so a search filters permissions on the row it reads, without a join per hit. No foreign
      // key on organization_id: documents are derived rows, and a key's check would be a query
      // per inserted row in a bulk load.
      `create table search_document (
        id uuid primary key,
        organization_id uuid not null,
        kind text not null,
        parent_id uuid,
        project_id uuid,
        study_id uuid,
        assay_id uuid,
        visibility text,
        own_archived boolean not null default false,
        archived boolean not null default false,
        code text,
        tsv tsvector not null)
       with (fillfactor = 90)`,
      // The words. The pending list (fastupdate) makes an insert cheap, and every search reads it
      // whole: 1 MB keeps that read short.
      `create index search_document_tsv_idx on search_document using gin (tsv) with (gin_pending_list_limit = 1024)`,
      // Codes, exact and by prefix, ignoring case. text_pattern_ops compares bytes, whatever the
      // database's collation (a plain index under en_US cannot serve a prefix range).
      `create index search_document_code_idx on search_document (organization_id, lower(code) text_pattern_ops) where code is not null`,
      // A record's children, to pass a move, a visibility change or an archive down to them. The
      // columns they pass (project, visibility, archived ...) are not indexed: those updates stay HOT.
      `create index search_document_parent_idx on search_document (parent_id) where parent_id is not null`,
      // Children take their place, visibility and archived from their parent's document: when it
      // is inserted (children loaded first, e.g. in bulk) or when these change (a move, a
      // visibility change, an archive). Statement-level, so a bulk statement passes them on in one
      // update; the children's update fires it again for their own children.
      inheritFunction('create'),
      `create trigger search_document_inherit_ins after insert on search_document
         referencing new table as labdata_new for each statement execute function labdata_search_inherit()`,
      `create trigger search_document_inherit_upd after update on search_document
         referencing old table as labdata_old new table as labdata_new for each statement execute function labdata_search_inherit()`,
      // The query of a search (plugins/search/query.ts parses the web-search syntax into items,
      // each in a group; groups are alternatives, items of a group all hold). An item matches its
      // English stems or its plain words (names: gene and compound names are not stemmed away).
      // Items that are only English stop words count only when their group has nothing else (a
      // search for the gene "WAS"). NULL when nothing is searchable. `ranked`: without the excluded
      // items, for ts_rank (which scores a query with a negation 0).
      `create function labdata_search_tsquery(items jsonb, ranked boolean default false) returns tsquery
       language plpgsql stable set client_min_messages = warning as $$
       declare
         result tsquery; conj tsquery; stops tsquery; leaf tsquery; e tsquery; s tsquery; positive boolean; item record;
       begin
         for g in 1 .. coalesce((select max((x->>'grp')::int) from jsonb_array_elements(items) x), 0) loop
           conj := null; stops := null; positive := false;
           for item in select * from jsonb_to_recordset(items) as x(term text, negated boolean, grp int) where x.grp = g loop
             s := phraseto_tsquery('simple', item.term);
             continue when numnode(s) = 0;
             e := phraseto_tsquery('english', item.term);
             if numnode(e) = 0 then
               if not item.negated then stops := case when stops is null then s else stops && s end; end if;
               continue;
             end if;
             leaf := case when e::text = s::text then e else e || s end;
             if item.negated and ranked then continue; end if;
             if item.negated then leaf := !! leaf; else positive := true; end if;
             conj := case when conj is null then leaf else conj && leaf end;
           end loop;
           if not positive then
             continue when stops is null;
             conj := case when conj is null then stops else stops && conj end;
           end if;
           result := case when result is null then conj else result || conj end;
         end loop;
         return result;
       end $$`,
      // The searchable sources whose owners migrated before this plugin was enabled
      // (plugins/search/documents.ts, sourceMigration): index them now, in creation order (the
      // plugins' order, parents before children).
      `do $$ declare f text;
       begin
         for f in select p.oid::regproc::text from pg_proc p where p.proname like 'labdata\\_search\\_attach\\_%'
                   and p.pronamespace = (select oid from pg_namespace where nspname = current_schema()) order by p.oid loop
           execute 'select ' || f || '()';
         end loop;
       end $$`,
    ],
  },
  {
    name: 'search-0002-code-infix',
    sql: [
      // A code by a part of it (`0142` finds STUDY-0142 and ASSAY-0142-A): trigrams of the codes.
      // pg_trgm ships with PostgreSQL and is trusted since 13: the database's owner (or a role with
      // CREATE on it) may create it; README, "Database requirements".
      `create extension if not exists pg_trgm`,
      `create index search_document_code_trgm_idx on search_document using gin (lower(code) gin_trgm_ops) where code is not null`,
    ],
  },
  {
    name: 'search-0003-inherit-precheck',
    sql: [inheritFunction('create or replace', true)],
  },
];
