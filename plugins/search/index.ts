import { definePlugin, defineRead } from '../../core/public.ts';
import { repairSql } from './documents.ts';
import { searchSources } from './extensions.ts';
import { migrations } from './migrations.ts';
import { searchHitSchema, searchQuery, searchToolParams } from './schemas.ts';
import { type SearchInput, SearchService, searchSort } from './service.ts';

/**
 * Search: any record the caller may view, by its words or its code, over REST
 * (`GET /search`) and MCP (`search`). Plugins make their records searchable through
 * `search.sources` (extensions.ts); this plugin keeps their documents' table and serves the read.
 */
export default definePlugin({
  name: 'search',
  version: '1.0.0',
  description: 'Search every record the caller may view by words or code',
  tags: {
    Search: 'Find records by their words (names, descriptions, notes, tasks, links) or by their code, best match first.',
  },
  migrations,
  // Every plugin's setup has run when `register` does: the sources are all declared by then.
  register(ctx) {
    const sources = searchSources(ctx.services).all();
    if (!sources.length) return;
    const service = new SearchService(sources);
    // Rows loaded with triggers off (a restore, a bulk load) get their documents from `labdata recount`.
    ctx.services.counters.register({ plugin: ctx.plugin, statements: [], repairs: sources.flatMap(repairSql) });
    const kinds = service.kinds;
    ctx.read(
      defineRead({
        name: 'search',
        summary: 'Search records by words or code',
        description:
          `Find the records the caller may view (${kinds.join(', ')}) by their words or their code, best match first, ` +
          'with a snippet of the matching text. Use this first whenever looking for a record by name, code (e.g. STUDY-0142), ' +
          'topic or content, instead of paging through list tools; then fetch a hit by its id with the get tool of its type. ' +
          '`types` narrows the kinds; archived records are left out unless `archived` is true.',
        path: '/search',
        tags: ['Search'],
        query: searchQuery(kinds),
        toolParams: searchToolParams(kinds),
        response: searchHitSchema(kinds),
        paged: { sort: searchSort },
        run: (c, input, page) => service.search(c, input as SearchInput, page),
      }),
    );
  },
});
