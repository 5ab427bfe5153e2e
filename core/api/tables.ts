/** `tables` of the kernel's entry point: the kernel's own tables plugins use, and how their rows are shown. */
/** Entities plugins may write through: teams and their members, project access, organization users. */
export { Team, TeamMember, ProjectMember, OrganizationUser } from '../entities/index.ts';
/** Organization users as every plugin shows them: the schema, the columns to select, the DTO. */
export { OrganizationUserSchema, organizationUserColumns, toOrganizationUserDto, type OrganizationUserRow, type OrganizationUserDto } from '../entities/dto.ts';
/** The actor's active teams as SQL (a uuid[]), or undefined when it is in none: for permission SQL beyond the permission service's. */
export { actorTeams } from '../permissions/index.ts';
