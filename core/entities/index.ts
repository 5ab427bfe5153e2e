import { defineEntity, p } from '@mikro-orm/core';
import { creationTime } from '../db/timestamps.ts';

/**
 * Kernel-owned tables: the tenant, its people, their keys, teams and project access.
 * Relations are kept as plain id columns: every query is written against the tables it
 * needs (permission filters are SQL), so the ORM is used for writes and locking only.
 */
export const Organization = defineEntity({
  name: 'Organization',
  tableName: 'organization',
  properties: {
    id: p.uuid().primary(),
    name: p.string(),
    createdAt: p.datetime().onCreate(creationTime),
  },
});

export const User = defineEntity({
  name: 'User',
  tableName: 'app_user',
  properties: {
    id: p.uuid().primary(),
    email: p.string(),
    displayName: p.string(),
    createdAt: p.datetime().onCreate(creationTime),
  },
});

export const OrganizationUser = defineEntity({
  name: 'OrganizationUser',
  tableName: 'organization_user',
  properties: {
    id: p.uuid().primary(),
    organizationId: p.uuid(),
    userId: p.uuid(),
    roles: p.array().$type<string[]>(),
    status: p.string(),
    createdAt: p.datetime().onCreate(creationTime),
    version: p.integer().version(),
  },
});

export const ApiKey = defineEntity({
  name: 'ApiKey',
  tableName: 'api_key',
  properties: {
    id: p.string().primary(),
    secretHash: p.blob(),
    name: p.string(),
    userId: p.uuid(),
    organizationId: p.uuid(),
    organizationUserId: p.uuid(),
    createdAt: p.datetime().onCreate(creationTime),
    expiresAt: p.datetime(),
    revokedAt: p.datetime().nullable(),
    lastUsedAt: p.datetime().nullable(),
  },
});

export const Team = defineEntity({
  name: 'Team',
  tableName: 'team',
  properties: {
    id: p.uuid().primary(),
    organizationId: p.uuid(),
    name: p.string(),
    description: p.string().nullable(),
    active: p.boolean(),
    createdAt: p.datetime().onCreate(creationTime),
    updatedAt: p.datetime().onCreate(creationTime).onUpdate(() => new Date()),
    version: p.integer().version(),
  },
});

export const TeamMember = defineEntity({
  name: 'TeamMember',
  tableName: 'team_member',
  properties: {
    teamId: p.uuid().primary(),
    organizationUserId: p.uuid().primary(),
  },
});

/** Access to a project for one organization user or one team (exactly one of the two). */
export const ProjectMember = defineEntity({
  name: 'ProjectMember',
  tableName: 'project_member',
  properties: {
    id: p.uuid().primary(),
    organizationId: p.uuid(),
    projectId: p.uuid(),
    organizationUserId: p.uuid().nullable(),
    teamId: p.uuid().nullable(),
    createdAt: p.datetime().onCreate(creationTime),
  },
});

export const kernelEntities = [Organization, User, OrganizationUser, ApiKey, Team, TeamMember, ProjectMember];
