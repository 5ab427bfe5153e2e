import crypto from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { ApiKey, Organization, OrganizationUser, Team, TeamMember, User } from '../../core/entities/index.ts';
import { hashSecret } from '../../core/auth/api-keys.ts';
import { organizationUserColumns, toOrganizationUserDto, type OrganizationUserRow } from '../../core/entities/dto.ts';
import { queryOne, sql } from '../../core/db/sql.ts';
import { isUuid } from '../../core/text.ts';
import { parseDateInput } from '../../core/schemas.ts';
import { DATE_INPUT_PATTERN } from '../../core/validation.ts';
import { AdminError } from './errors.ts';

export const KEY_VALIDITY_DAYS = [7, 30, 90, 365] as const;
export const KEY_NAME_MAX = 64;

// key_<keyId>.<secret> (core/auth/api-keys.ts reads it): keyId is 20 lowercase base32 characters.
function newKeyId(): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz234567';
  const bytes = crypto.randomBytes(20);
  return Array.from(bytes, (b) => alphabet[b & 31]).join('');
}

export interface CreatedKey {
  id: string;
  key: string;
}

/** Creates a key row; the secret leaves this function once, in the returned `key`. */
function createApiKey(
  em: EntityManager,
  input: { userId: string; organizationId: string; organizationUserId: string; name: string; expiresAt: Date },
): CreatedKey {
  const id = newKeyId();
  const secret = crypto.randomBytes(32).toString('base64url');
  em.create(ApiKey, {
    id,
    secretHash: hashSecret(secret),
    name: input.name,
    userId: input.userId,
    organizationId: input.organizationId,
    organizationUserId: input.organizationUserId,
    expiresAt: input.expiresAt,
    revokedAt: null,
    lastUsedAt: null,
  });
  return { id, key: `key_${id}.${secret}` };
}

// Kept light in errors.ts so that the CLI's help and usage paths need not load the entities.
export { AdminError };

export const ROLES = ['ORGANIZATION_USER', 'ORGANIZATION_ADMIN'] as const;
export const ORGANIZATION_USER_STATUSES = ['ACTIVE', 'INVITED', 'INACTIVE'] as const;

export { isUuid };

export function checkRoles(roles: unknown, where: string): string[] {
  if (!Array.isArray(roles) || roles.length === 0) throw new AdminError(`${where}: roles must be a non-empty list`);
  for (const role of roles) {
    if (!(ROLES as readonly string[]).includes(role)) throw new AdminError(`${where}: unknown role "${role}" (known: ${ROLES.join(', ')})`);
  }
  return [...new Set(roles as string[])];
}

export function createOrganization(em: EntityManager, name: string) {
  return em.create(Organization, { id: crypto.randomUUID(), name });
}

export async function createUser(em: EntityManager, email: string, displayName: string) {
  const taken = await queryOne(em, sql`select 1 from app_user where lower(email) = lower(${email})`);
  if (taken) throw new AdminError(`a user with email ${email} already exists`);
  return em.create(User, { id: crypto.randomUUID(), email, displayName });
}

export function addMembership(em: EntityManager, input: { organizationId: string; userId: string; roles: string[]; status: string }) {
  return em.create(OrganizationUser, { id: crypto.randomUUID(), ...input });
}

export function createTeam(em: EntityManager, input: { organizationId: string; name: string; description?: string; memberIds: string[] }) {
  const team = em.create(Team, { id: crypto.randomUUID(), organizationId: input.organizationId, name: input.name, description: input.description ?? null, active: true });
  for (const organizationUserId of new Set(input.memberIds)) em.create(TeamMember, { teamId: team.id, organizationUserId });
  return team;
}

export interface KeyRequest {
  userId: string;
  organizationId: string;
  name: string;
  /** Unknown: a bootstrap file's value is checked here, whatever JSON type it has. */
  days?: unknown;
  expiresAt?: unknown;
}

/** An ISO date-time (`2031-03-07T12:00:00Z`, offset or `Z`) or a date (midnight UTC): the REST date inputs' pattern. */
const ISO_DATE_TIME = new RegExp(DATE_INPUT_PATTERN, 'i');

/** `value` as a date when it is an ISO date-time or date the calendar has (not Feb 30, not 24:00). */
function calendarDate(value: unknown): Date | undefined {
  if (typeof value !== 'string' || !ISO_DATE_TIME.test(value)) return undefined;
  try {
    return parseDateInput('expiresAt', value) ?? undefined;
  } catch {
    return undefined;
  }
}

/** Validates a key request against the contract's rules and creates the key. */
export async function issueKey(em: EntityManager, req: KeyRequest, enterprise: boolean): Promise<CreatedKey> {
  if (!enterprise) throw new AdminError('no API key can be created: this deployment is not on the Enterprise tier (LABDATA_ENTERPRISE=false)');
  if (!req.name || typeof req.name !== 'string' || !req.name.trim()) throw new AdminError('key name must not be blank');
  if ([...req.name].length > KEY_NAME_MAX) throw new AdminError(`key name must be at most ${KEY_NAME_MAX} characters`);
  let expiresAt: Date;
  if (req.expiresAt !== undefined && req.days !== undefined) {
    throw new AdminError('give either days or expiresAt, not both');
  } else if (req.expiresAt !== undefined) {
    const date = calendarDate(req.expiresAt);
    if (!date) throw new AdminError(`expiresAt ${JSON.stringify(req.expiresAt)} is not an ISO date-time (such as 2031-03-07T12:00:00Z)`);
    expiresAt = date;
  } else {
    if (!(KEY_VALIDITY_DAYS as readonly unknown[]).includes(req.days)) {
      throw new AdminError(`days must be one of ${KEY_VALIDITY_DAYS.join(', ')}`);
    }
    expiresAt = new Date(Date.now() + (req.days as number) * 86_400_000);
  }
  const membership = await em.findOne(OrganizationUser, { userId: req.userId, organizationId: req.organizationId });
  if (!membership) throw new AdminError(`user ${req.userId} is not a member of organization ${req.organizationId}`);
  return createApiKey(em, { userId: req.userId, organizationId: req.organizationId, organizationUserId: membership.id, name: req.name, expiresAt });
}

export async function listKeys(em: EntityManager, userId: string) {
  // An unknown user is a mistake in the id, not a user without keys.
  if (!(await em.findOne(User, { id: userId }))) throw new AdminError(`no user with id ${userId}`);
  const keys = await em.find(ApiKey, { userId }, { orderBy: { createdAt: 'asc' } });
  return keys.map((k) => ({
    id: k.id,
    name: k.name,
    organization: k.organizationId,
    createdAt: k.createdAt.toISOString(),
    lastUsedAt: k.lastUsedAt?.toISOString() ?? null,
    expiresAt: k.expiresAt.toISOString(),
    revokedAt: k.revokedAt?.toISOString() ?? null,
  }));
}

export async function revokeKey(em: EntityManager, id: string) {
  const key = await em.findOne(ApiKey, { id });
  if (!key) throw new AdminError(`no API key with id ${id}`);
  key.revokedAt ??= new Date();
  await em.flush();
  return { id: key.id, revokedAt: key.revokedAt.toISOString() };
}

export async function setRoles(em: EntityManager, organizationUserId: string, roles: string[]) {
  if (!isUuid(organizationUserId)) throw new AdminError(`"${organizationUserId}" is not an organization user id (UUID)`);
  const ou = await em.findOne(OrganizationUser, { id: organizationUserId });
  if (!ou) throw new AdminError(`no organization user with id ${organizationUserId}`);
  ou.roles = checkRoles(roles, 'roles set');
  await em.flush();
  const row = await queryOne<OrganizationUserRow>(em, sql`select ${organizationUserColumns} from organization_user ou join app_user u on u.id = ou.user_id where ou.id = ${organizationUserId}`);
  return toOrganizationUserDto(row!);
}
