import { tables } from '../../core/public.ts';

/** A user as `/users` shows it: the `user` part of the kernel's organization-user schema (one schema object, one OpenAPI component). */
export const UserSchema = tables.OrganizationUserSchema.properties.user;
