import { db, raw } from '../../core/public.ts';
import { OrganizationRecords } from '../../lib/records/index.ts';
import { Keyword } from './entities.ts';

interface KeywordShape {
  id: string;
  organizationId: string;
  value: string;
  category?: string | null;
  createdById: string;
  createdAt: Date | string;
}

function toDto(k: KeywordShape) {
  return { id: k.id, organizationId: k.organizationId, value: k.value, category: k.category ?? null, createdById: k.createdById, createdAt: db.isoDate(k.createdAt)! };
}

export const keywordSort = {
  fields: { value: 'r.value', createdAt: 'r.created_at' },
  default: ['value,asc'],
  tiebreaker: 'r.id',
};

/** Keywords are organization records: OrganizationRecords (organization-scoped records) does the work. */
export function keywordRecords() {
  return new OrganizationRecords<KeywordShape, ReturnType<typeof toDto>>({
    noun: 'keyword',
    plural: 'keywords',
    entity: Keyword,
    table: 'keyword',
    columns: raw(`r.id, r.organization_id as "organizationId", r.value, r.category, r.created_by_id as "createdById", r.created_at as "createdAt"`),
    toDto,
    summary: (k) => ({ value: k.value }),
    duplicate: (k) => `A keyword with value "${k.value}" already exists`,
  });
}
