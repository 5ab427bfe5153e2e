import { definePlugin } from '../../core/public.ts';
import { Keyword } from './entities.ts';
import { events } from './events.ts';
import { migrations } from './migrations.ts';
import { createBodySchema, keywordSchema } from './schemas.ts';
import { keywordRecords, keywordSort } from './service.ts';

const tags = ['Keywords'];

/** Keywords: organization-wide, case-sensitive unique values (list, get, create; no update or delete). */
export default definePlugin({
  name: 'keywords',
  version: '1.0.0',
  description: 'Keywords (list, get, create)',
  tags: {
    Keywords: 'Organization-wide keywords, unique by value.',
  },
  entities: [Keyword],
  migrations,
  events,
  setup: () => keywordRecords(),
  register(ctx, records) {
    for (const read of records.reads({ tags, response: keywordSchema, sort: keywordSort })) ctx.read(read);
    ctx.write(
      records.createWrite({
        tags,
        response: keywordSchema,
        body: createBodySchema,
        // Trimmed so that "pH " and "pH" are one keyword (uniqueness would be meaningless otherwise).
        values: (body) => ({ value: body.value.trim(), category: body.category?.trim() ?? null }),
      }),
    );
  },
});
