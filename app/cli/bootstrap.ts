import type { EntityManager } from '@mikro-orm/postgresql';
import type { Kernel } from '../../core/kernel/kernel.ts';
import type { BootstrapContext, BootstrapSection } from '../../core/kernel/plugin.ts';
import type { ProgressFn } from './progress.ts';
import { Organization, OrganizationUser, User } from '../../core/entities/index.ts';
import { AdminError, ORGANIZATION_USER_STATUSES, addMembership, checkRoles, createOrganization, createTeam, createUser, isUuid, issueKey } from './admin.ts';

type Item = Record<string, unknown>;
type Output = Record<string, Record<string, unknown>>;

/** The kernel's own sections; the others belong to plugins. */
const KERNEL_SECTIONS = ['organizations', 'users', 'teams', 'apiKeys'];
/** Sections the contract names, whose plugin may not be enabled in a deployment. */
const CONTRACT_PLUGIN_SECTIONS = ['assayTypes', 'storageDrives', 'integrations', 'personalIntegrations', 'notes'];

function list(file: Item, section: string): Item[] {
  const value = file[section];
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new AdminError(`${section} must be a list`);
  return value.map((item, i) => {
    if (!item || typeof item !== 'object' || Array.isArray(item)) throw new AdminError(`${section}[${i}] must be an object`);
    return item as Item;
  });
}

function label(section: string, item: Item, i: number): string {
  return typeof item.ref === 'string' ? `${section} "${item.ref}"` : `${section}[${i}]`;
}

/** The fields each kernel section's items (and a user's memberships) may carry: anything else is a typo, refused. */
const FIELDS: Record<string, readonly string[]> = {
  organizations: ['ref', 'name'],
  users: ['ref', 'email', 'displayName', 'memberships'],
  memberships: ['organization', 'roles', 'status'],
  teams: ['ref', 'organization', 'name', 'description', 'members'],
  apiKeys: ['ref', 'user', 'organization', 'name', 'days', 'expiresAt'],
};

function onlyKnownFields(item: Item, kind: string, where: string): void {
  const unknown = Object.keys(item).find((field) => !FIELDS[kind].includes(field));
  if (unknown !== undefined) throw new AdminError(`${where}: unknown field "${unknown}" (known: ${FIELDS[kind].join(', ')})`);
}

function text(item: Item, field: string, where: string, optional = false): string | undefined {
  const v = item[field];
  if (v === undefined && optional) return undefined;
  if (typeof v !== 'string' || !v.trim()) throw new AdminError(`${where}: ${field} must be a non-blank string`);
  return v;
}

/** Maps refs of one section to ids; also accepts ids of rows that already exist. */
class Refs {
  #map = new Map<string, string>();
  readonly section: string;
  constructor(section: string) {
    this.section = section;
  }
  add(ref: unknown, id: string, where: string) {
    if (ref === undefined) return;
    if (typeof ref !== 'string' || !ref) throw new AdminError(`${where}: ref must be a non-empty string`);
    if (this.#map.has(ref)) throw new AdminError(`${where}: ref "${ref}" is used twice in ${this.section}`);
    this.#map.set(ref, id);
  }
  get(value: unknown): string | undefined {
    return typeof value === 'string' ? this.#map.get(value) : undefined;
  }
}

async function resolve(em: EntityManager, refs: Refs, value: unknown, entity: typeof Organization | typeof User, where: string): Promise<string> {
  const fromRef = refs.get(value);
  if (fromRef) return fromRef;
  // An id in capitals is the same id: the canonical lowercase form is what gets stored.
  if (isUuid(value) && (await em.findOne(entity as typeof Organization, { id: value.toLowerCase() }))) return value.toLowerCase();
  throw new AdminError(`${where}: unknown ${refs.section.replace(/s$/, '')} "${String(value)}"`);
}

/**
 * Applies a bootstrap file in one transaction: any bad item rolls everything back, so a
 * failed run changes nothing. Returns the contract's output (ids and key secrets by ref).
 */
export async function applyBootstrap(em: EntityManager, file: unknown, kernel: Kernel, progress?: ProgressFn): Promise<Output> {
  const { enterprise } = kernel.services.config;
  if (!file || typeof file !== 'object' || Array.isArray(file)) throw new AdminError('the bootstrap file must hold a JSON object');
  const doc = file as Item;
  const handlers = new Map<string, BootstrapSection>();
  for (const plugin of kernel.plugins) for (const [name, handler] of Object.entries(plugin.bootstrap ?? {})) handlers.set(name, handler);
  const NOT_YET = CONTRACT_PLUGIN_SECTIONS.filter((name) => !handlers.has(name));
  const SECTIONS = [...KERNEL_SECTIONS, ...handlers.keys(), ...NOT_YET];
  for (const key of Object.keys(doc)) {
    if (!SECTIONS.includes(key)) throw new AdminError(`unknown section "${key}" (known: ${SECTIONS.join(', ')})`);
  }
  for (const section of NOT_YET) {
    if (list(doc, section).length) throw new AdminError(`${section}: not supported yet (no enabled plugin provides it)`);
  }
  // One step per non-empty section, in the order they are applied (the CLI shows them).
  const steps = [...KERNEL_SECTIONS, ...handlers.keys()].filter((name) => list(doc, name).length > 0);
  let done = 0;
  const finished = (section: string) => {
    if (steps.includes(section)) progress?.(`${section} (${list(doc, section).length})`, ++done, steps.length);
  };
  return em.transactional(async (tx) => {
    const out: Output = {};
    const orgs = new Refs('organizations');
    const users = new Refs('users');
    const membership = new Map<string, string>(); // `${userId}/${orgId}` → organization user id
    const inactive = new Set<string>(); // organization user ids made INACTIVE by this file

    for (const [i, item] of list(doc, 'organizations').entries()) {
      const where = label('organizations', item, i);
      onlyKnownFields(item, 'organizations', where);
      const org = createOrganization(tx, text(item, 'name', where)!);
      orgs.add(item.ref, org.id, where);
      if (typeof item.ref === 'string') (out.organizations ??= {})[item.ref] = { id: org.id };
    }
    await tx.flush();
    finished('organizations');

    const emails = new Set<string>();
    for (const [i, item] of list(doc, 'users').entries()) {
      const where = label('users', item, i);
      onlyKnownFields(item, 'users', where);
      const email = text(item, 'email', where)!;
      if (!/^[^@\s]+@[^@\s]+$/.test(email)) throw new AdminError(`${where}: "${email}" is not an e-mail address`);
      if (emails.has(email.toLowerCase())) throw new AdminError(`${where}: duplicate email ${email}`);
      emails.add(email.toLowerCase());
      const user = await createUser(tx, email, text(item, 'displayName', where, true) ?? email).catch((e: Error) => {
        throw new AdminError(`${where}: ${e.message}`);
      });
      users.add(item.ref, user.id, where);
      const organizationUsers: Record<string, string> = {};
      const memberships = item.memberships ?? [];
      if (!Array.isArray(memberships)) throw new AdminError(`${where}: memberships must be a list`);
      for (const [j, entry] of (memberships as unknown[]).entries()) {
        if (!entry || typeof entry !== 'object' || Array.isArray(entry)) throw new AdminError(`${where}: memberships[${j}] must be an object`);
        const m = entry as Item;
        onlyKnownFields(m, 'memberships', `${where}: memberships[${j}]`);
        const orgId = await resolve(tx, orgs, m.organization, Organization, where);
        const status = (m.status ?? 'ACTIVE') as string;
        if (!(ORGANIZATION_USER_STATUSES as readonly string[]).includes(status)) {
          throw new AdminError(`${where}: unknown status "${status}" (known: ${ORGANIZATION_USER_STATUSES.join(', ')})`);
        }
        const roles = checkRoles(m.roles ?? ['ORGANIZATION_USER'], where);
        if (membership.has(`${user.id}/${orgId}`)) throw new AdminError(`${where}: member of organization ${String(m.organization)} twice`);
        const ou = addMembership(tx, { organizationId: orgId, userId: user.id, roles, status });
        membership.set(`${user.id}/${orgId}`, ou.id);
        if (status === 'INACTIVE') inactive.add(ou.id);
        organizationUsers[String(m.organization)] = ou.id;
      }
      if (typeof item.ref === 'string') (out.users ??= {})[item.ref] = { id: user.id, organizationUsers };
    }
    await tx.flush();
    finished('users');

    const organizationUserOf = async (userId: string, orgId: string, where: string) => {
      const known = membership.get(`${userId}/${orgId}`);
      if (known) return known;
      const ou = await tx.findOne(OrganizationUser, { userId, organizationId: orgId });
      if (!ou) throw new AdminError(`${where}: user ${userId} is not a member of organization ${orgId}`);
      return ou.id;
    };

    for (const [i, item] of list(doc, 'teams').entries()) {
      const where = label('teams', item, i);
      onlyKnownFields(item, 'teams', where);
      const orgId = await resolve(tx, orgs, item.organization, Organization, where);
      const members = item.members ?? [];
      if (!Array.isArray(members)) throw new AdminError(`${where}: members must be a list`);
      const memberIds: string[] = [];
      for (const member of members) memberIds.push(await organizationUserOf(await resolve(tx, users, member, User, where), orgId, where));
      // As on the REST API: a deactivated membership joins no team (it would come back to life on reactivation).
      const stored = await tx.find(OrganizationUser, { id: { $in: memberIds }, status: 'INACTIVE' });
      const gone = memberIds.findIndex((id) => inactive.has(id) || stored.some((ou) => ou.id === id));
      if (gone >= 0) throw new AdminError(`${where}: member "${String(members[gone])}" is INACTIVE in this organization`);
      const team = createTeam(tx, { organizationId: orgId, name: text(item, 'name', where)!, description: text(item, 'description', where, true), memberIds });
      if (typeof item.ref === 'string') (out.teams ??= {})[item.ref] = { id: team.id };
    }
    finished('teams');

    for (const [i, item] of list(doc, 'apiKeys').entries()) {
      const where = label('apiKeys', item, i);
      onlyKnownFields(item, 'apiKeys', where);
      // The secret is shown once, under the key's ref: without one it would be lost.
      if (typeof item.ref !== 'string' || !item.ref) throw new AdminError(`${where}: ref is required (the key's secret is printed under it, once)`);
      const userId = await resolve(tx, users, item.user, User, where);
      const orgId = await resolve(tx, orgs, item.organization, Organization, where);
      await tx.flush();
      const key = await issueKey(
        tx,
        { userId, organizationId: orgId, name: item.name as string, days: item.days, expiresAt: item.expiresAt },
        enterprise,
      ).catch((e: Error) => {
        throw new AdminError(`${where}: ${e.message}`);
      });
      if (typeof item.ref === 'string') (out.apiKeys ??= {})[item.ref] = key;
    }
    await tx.flush();
    finished('apiKeys');

    // Plugin sections, in plugin dependency order (a section may point at an earlier one's refs).
    const context: BootstrapContext = {
      em: tx,
      services: kernel.services,
      label,
      organization: (value, where) => resolve(tx, orgs, value, Organization, where),
      user: (value, where) => resolve(tx, users, value, User, where),
      organizationUser: async (user, organizationId, where) => organizationUserOf(await resolve(tx, users, user, User, where), organizationId, where),
      ref: (section, value) => (typeof value === 'string' ? (out[section]?.[value] as { id: string } | undefined)?.id : undefined),
    };
    for (const [name, handler] of handlers) {
      const items = list(doc, name);
      if (items.length === 0) continue;
      const created = await handler(context, items);
      await tx.flush();
      if (Object.keys(created).length) out[name] = created;
      finished(name);
    }
    return out;
  });
}
