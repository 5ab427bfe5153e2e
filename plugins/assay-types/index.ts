import { definePlugin, defineRead, defineWrite, schemas } from '../../core/public.ts';
import { assayTypesSection } from './bootstrap.ts';
import { AssayType } from './entities.ts';
import { events } from './events.ts';
import { migrations } from './migrations.ts';
import { AssayTypeSchema, CreateBody, StatusBody, UpdateBody } from './schemas.ts';
import { AssayTypeService, assayTypeSort } from './service.ts';

const tags = ['Assay types'];

/** Assay types: the organization's metadata schemas (fields and standard tasks) for assays. */
export default definePlugin({
  name: 'assay-types',
  version: '1.0.0',
  description: 'Assay types (list, get; admins create, update, change status, delete)',
  tags: {
    'Assay types': 'Templates of assays: their custom fields and standard tasks. Organization admins write.',
  },
  dependsOn: ['users'],
  entities: [AssayType],
  migrations,
  events,
  bootstrap: { assayTypes: assayTypesSection },
  setup() {
    return new AssayTypeService();
  },
  register(ctx, service) {
    ctx.read(
      defineRead({
        name: 'list_assay_types',
        description: 'List the assay types of the organization (DELETED ones are left out), with their fields and standard tasks.',
        path: '/assay-types',
        tags,
        response: AssayTypeSchema,
        paged: { sort: assayTypeSort },
        run: (c, _input, page) => service.list(c, page),
      }),
    );
    ctx.read(
      defineRead({
        name: 'get_assay_type',
        description: 'Get one assay type by id, with its metadata fields and standard tasks.',
        path: '/assay-types/:id',
        tags,
        params: schemas.IdParams,
        response: AssayTypeSchema,
        run: (c, { id }) => service.get(c, id),
      }),
    );
    ctx.write(
      defineWrite({
        method: 'POST',
        operationId: 'create_assay_type',
        description: 'Create an assay type (status DRAFT unless ACTIVE is given). Organization admins only.',
        path: '/assay-types',
        tags,
        body: CreateBody,
        status: 201,
        errors: [403, 409],
        response: AssayTypeSchema,
        run: (c, { body }) => service.create(c, body),
      }),
    );
    ctx.write(
      defineWrite({
        method: 'PUT',
        operationId: 'update_assay_type',
        description: 'Update an assay type (omitted fields keep their value; `fields` and `tasks` replace the lists). Organization admins only.',
        path: '/assay-types/:id',
        tags,
        params: schemas.IdParams,
        body: UpdateBody,
        status: 200,
        errors: [403, 409],
        response: AssayTypeSchema,
        run: (c, { params, body }) => service.update(c, params.id, body),
      }),
    );
    ctx.write(
      defineWrite({
        method: 'POST',
        operationId: 'set_assay_type_status',
        description: 'Change the status of an assay type (allowed transitions: see the README). Organization admins only.',
        path: '/assay-types/:id/status',
        tags,
        params: schemas.IdParams,
        body: StatusBody,
        status: 200,
        errors: [403],
        response: AssayTypeSchema,
        run: (c, { params, body }) => service.setStatus(c, params.id, body.status),
      }),
    );
    ctx.write(
      defineWrite({
        method: 'DELETE',
        operationId: 'delete_assay_type',
        description: 'Delete an assay type: it is marked DELETED, no longer listed or usable, and kept for the assays that have it. Organization admins only.',
        path: '/assay-types/:id',
        tags,
        params: schemas.IdParams,
        status: 204,
        errors: [403],
        run: (c, { params }) => service.delete(c, params.id),
      }),
    );
  },
});
