import { db, raw } from '../../core/public.ts';
import { OrganizationRecords } from '../../lib/records/index.ts';
import { Collaborator } from './entities.ts';

interface CollaboratorShape {
  id: string;
  organizationId: string;
  label: string;
  organizationName: string | null;
  organizationLocation: string | null;
  contactPersonName: string | null;
  contactEmail: string | null;
  code: string | null;
  active: boolean;
  createdById: string;
  createdAt: Date | string;
  updatedAt: Date | string;
  version: number;
}

/** Fields a PUT may change (all the spec lists). */
export const EDITABLE = ['label', 'organizationName', 'organizationLocation', 'contactPersonName', 'contactEmail', 'code', 'active'] as const;

function toDto(c: CollaboratorShape) {
  return {
    id: c.id,
    organizationId: c.organizationId,
    label: c.label,
    organizationName: c.organizationName ?? null,
    organizationLocation: c.organizationLocation ?? null,
    contactPersonName: c.contactPersonName ?? null,
    contactEmail: c.contactEmail ?? null,
    code: c.code ?? null,
    active: c.active,
    createdById: c.createdById,
    createdAt: db.isoDate(c.createdAt)!,
    updatedAt: db.isoDate(c.updatedAt)!,
    version: c.version,
  };
}

export const collaboratorSort = {
  fields: { label: 'r.label', organizationName: 'r.organization_name', createdAt: 'r.created_at' },
  default: ['label,asc'],
  tiebreaker: 'r.id',
};

/** Collaborators are organization records: the kernel's OrganizationRecords does the work. */
export function collaboratorRecords() {
  return new OrganizationRecords<CollaboratorShape, ReturnType<typeof toDto>>({
    noun: 'collaborator',
    plural: 'collaborators',
    entity: Collaborator,
    table: 'collaborator',
    columns: raw(`r.id, r.organization_id as "organizationId", r.label, r.organization_name as "organizationName",
      r.organization_location as "organizationLocation", r.contact_person_name as "contactPersonName",
      r.contact_email as "contactEmail", r.code, r.active, r.created_by_id as "createdById", r.created_at as "createdAt",
      r.updated_at as "updatedAt", r.version`),
    toDto,
    summary: (c) => ({ label: c.label }),
  });
}
