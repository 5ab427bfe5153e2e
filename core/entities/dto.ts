import { Type, type Static } from '@sinclair/typebox';
import { Timestamp, Uuid } from '../schemas.ts';
import type { EntityManager } from '@mikro-orm/postgresql';
import { isoDate, query, sql, type Sql } from '../db/sql.ts';

const UserSchema = Type.Object({
  id: Uuid(),
  email: Type.String(),
  displayName: Type.String(),
  createdAt: Timestamp(),
});

export const OrganizationUserSchema = Type.Object({
  id: Uuid(),
  organizationId: Uuid(),
  user: UserSchema,
  roles: Type.Array(Type.String()),
  status: Type.String(),
  createdAt: Timestamp(),
});

export type UserDto = Static<typeof UserSchema>;
export type OrganizationUserDto = Static<typeof OrganizationUserSchema>;

/** Columns (from `organization_user ou join app_user u`) that the mappers below read. */
export const organizationUserColumns: Sql = sql`ou.id as ou_id, ou.organization_id as ou_organization_id, ou.roles as ou_roles,
  ou.status as ou_status, ou.created_at as ou_created_at,
  u.id as u_id, u.email as u_email, u.display_name as u_display_name, u.created_at as u_created_at`;

export interface OrganizationUserRow {
  ou_id: string;
  ou_organization_id: string;
  ou_roles: string[];
  ou_status: string;
  ou_created_at: string;
  u_id: string;
  u_email: string;
  u_display_name: string;
  u_created_at: string;
}

function toUserDto(row: OrganizationUserRow): UserDto {
  return { id: row.u_id, email: row.u_email, displayName: row.u_display_name, createdAt: isoDate(row.u_created_at)! };
}

export function toOrganizationUserDto(row: OrganizationUserRow): OrganizationUserDto {
  return {
    id: row.ou_id,
    organizationId: row.ou_organization_id,
    user: toUserDto(row),
    roles: row.ou_roles,
    status: row.ou_status,
    createdAt: isoDate(row.ou_created_at)!,
  };
}

/** Organization users by id (`services.organizationUsers`: a feed's `user`, read beside its page; the server caches them). */
export interface OrganizationUserDirectory {
  get(em: EntityManager, ids: readonly string[]): Promise<Map<string, OrganizationUserDto>>;
}

/** The kernel's directory: one query, the ids as one array literal (one statement whatever their number). */
export async function lookupOrganizationUsers(em: EntityManager, ids: readonly string[]): Promise<Map<string, OrganizationUserDto>> {
  const rows = ids.length ? await query<OrganizationUserRow>(em, sql`select ${organizationUserColumns}
    from organization_user ou join app_user u on u.id = ou.user_id where ou.id = any (${`{${ids.join(',')}}`}::uuid[])`) : [];
  return new Map(rows.map((r) => [r.ou_id, toOrganizationUserDto(r)]));
}
