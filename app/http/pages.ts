import { Type, type TSchema } from '@sinclair/typebox';
import { ValidationError } from '../../core/errors.ts';
import { join, raw } from '../../core/db/sql.ts';
import type { PageRequest, SortOrder, SortSpec } from '../../core/pagination/index.ts';

/**
 * The wire side of a list read (spec, "Pagination"): the `page`, `size` and `sort` parameters a
 * REST list and an MCP list tool take, parsed into the kernel's PageRequest, and the page
 * envelope around the rows `fetchPage` (core/pagination) returns.
 */
export const DEFAULT_PAGE_SIZE = 20;
export const MAX_TOOL_PAGE_SIZE = 100;

export function pageQuerySchema(maxSize: number, spec: SortSpec) {
  return {
    page: Type.Optional(Type.Integer({ minimum: 0, default: 0, description: 'Zero-based page index' })),
    size: Type.Optional(
      Type.Integer({ minimum: 1, maximum: maxSize, default: DEFAULT_PAGE_SIZE, description: `Page size (at most ${maxSize}; a larger one is capped to ${maxSize})` }),
    ),
    sort: Type.Optional(
      Type.Array(Type.String(), {
        description: `\`field,direction\` (asc or desc); repeat for several fields. Fields: ${Object.keys(spec.fields).join(', ')}; default: ${spec.default.join(', then ')}`,
      }),
    ),
  };
}

export function toolPageSchema() {
  return {
    page: Type.Optional(Type.Integer({ minimum: 0, description: 'Zero-based page index (default 0)' })),
    size: Type.Optional(
      Type.Integer({ minimum: 1, maximum: MAX_TOOL_PAGE_SIZE, description: `Page size (default 20, at most ${MAX_TOOL_PAGE_SIZE})` }),
    ),
  };
}

export function parsePageRequest(
  input: { page?: number; size?: number; sort?: string[] },
  spec: SortSpec,
): PageRequest {
  const page = input.page ?? 0;
  const size = input.size ?? DEFAULT_PAGE_SIZE;
  const requested = input.sort ?? [];
  const orders = (requested.length ? requested : spec.default).map((value): SortOrder => {
    const [property, direction = 'asc', ...rest] = value.split(',').map((s) => s.trim());
    if (rest.length > 0 || !/^(asc|desc)$/i.test(direction)) {
      throw new ValidationError([{ field: 'sort', message: `"${value}" is not "field,asc" or "field,desc"` }]);
    }
    if (!Object.hasOwn(spec.fields, property)) {
      throw new ValidationError([
        { field: 'sort', message: `cannot sort by "${property}"; sortable fields: ${Object.keys(spec.fields).join(', ')}` },
      ]);
    }
    return { property, direction: direction.toUpperCase() === 'DESC' ? 'DESC' : 'ASC' };
  });
  const terms = orders.map((o) => raw(`${spec.fields[o.property]} ${o.direction}`));
  terms.push(raw(`${spec.tiebreaker} ASC`));
  const offset = page * size;
  if (!Number.isSafeInteger(offset)) throw new ValidationError([{ field: 'page', message: 'is too large' }]);
  return { page, size, offset, orders, sorted: requested.length > 0, orderBy: join(terms) };
}

/** Spring-style page envelope, as the spec names its fields. */
export function pageSchema<T extends TSchema>(item: T) {
  const sortState = Type.Object({ empty: Type.Boolean(), sorted: Type.Boolean(), unsorted: Type.Boolean() });
  return Type.Object({
    content: Type.Array(item),
    totalElements: Type.Integer(),
    totalPages: Type.Integer(),
    size: Type.Integer(),
    number: Type.Integer(),
    numberOfElements: Type.Integer(),
    first: Type.Boolean(),
    last: Type.Boolean(),
    empty: Type.Boolean(),
    sort: sortState,
    pageable: Type.Object({
      pageNumber: Type.Integer(),
      pageSize: Type.Integer(),
      sort: sortState,
      offset: Type.Integer(),
      paged: Type.Boolean(),
      unpaged: Type.Boolean(),
    }),
  });
}

export function pageEnvelope<T>(items: T[], total: number, req: PageRequest) {
  const totalPages = Math.ceil(total / req.size);
  const sort = { empty: !req.sorted, sorted: req.sorted, unsorted: !req.sorted };
  return {
    content: items,
    totalElements: total,
    totalPages,
    size: req.size,
    number: req.page,
    numberOfElements: items.length,
    first: req.page === 0,
    last: req.page >= totalPages - 1,
    empty: items.length === 0,
    sort,
    pageable: { pageNumber: req.page, pageSize: req.size, sort, offset: req.offset, paged: true, unpaged: false },
  };
}
