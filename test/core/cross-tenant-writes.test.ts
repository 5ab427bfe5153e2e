// Existence in another organization is never revealed (spec: a record you may not view is a 404,
// never a 403). Every write operation of the OpenAPI document is called by keys of organization B
// (an admin and a plain user) twice: once naming real records of organization A, once naming
// random ids. The answers must be the same, and never 403. Bodies are the smallest valid ones the
// document describes, with ids of A's records in the fields that reference records.
import t from 'tap';
import crypto from 'node:crypto';
import { applyBootstrap } from '../../app/cli/bootstrap.ts';
import { startTestServer, type Member } from '../support/server.ts';

const server = await startTestServer(t);
const orgA = await server.organization();
const orgB = await server.organization();
const adminA = await server.admin(orgA);
const userA = await server.member(orgA);
const adminB = await server.admin(orgB);
const userB = await server.member(orgB);

async function create(who: Member, path: string, body: unknown): Promise<string> {
  const res = await server.post('/api/v1' + path, body, { key: who.key });
  if (res.status !== 201) throw new Error(`setup ${path}: ${res.status} ${res.text}`);
  return res.body.id;
}

// Organization A: one record of every kind a write can name.
const project = await create(adminA, '/projects', { code: 'A-1', name: 'A project', description: 'd', visibility: 'PUBLIC' });
const study = await create(adminA, '/studies', { projectId: project, name: 'A study' });
const otherStudy = await create(adminA, '/studies', { projectId: project, name: 'Another A study' });
const assayType = await create(adminA, '/assay-types', { name: 'A type', status: 'ACTIVE' });
const assay = await create(adminA, '/assays', { studyId: study, assayTypeId: assayType, name: 'A assay' });
const task = await create(adminA, `/projects/${project}/tasks`, { label: 'A task' });
const link = await create(adminA, `/projects/${project}/external-links`, { label: 'A link', url: 'https://example.org' });
const collection = await create(adminA, '/study-collections', { name: 'A collection', visibility: 'PUBLIC' });
const relationship = await create(adminA, `/studies/${study}/relationships`, { type: 'IS_RELATED_TO', targetStudyId: otherStudy });
const keyword = await create(adminA, '/keywords', { value: 'a-keyword' });
const collaborator = await create(adminA, '/collaborators', { label: 'A collaborator' });
const team = await create(adminA, '/teams', { name: 'A team', userIds: [userA.userId] });
const grant = await create(adminA, `/projects/${project}/access`, { userId: userA.userId });
const folders = await server.get(`/api/v1/projects/${project}/storage-folders`, { key: adminA.key });
const boot: Record<string, any> = await applyBootstrap(server.orm.em.fork(), {
  notes: [{ ref: 'n', parent: { projectId: project }, type: 'NOTE', format: 'MARKDOWN', content: 'A note', archived: false }],
  personalIntegrations: [{ ref: 'p', user: userA.userId, organization: orgA, type: 'GIT', name: 'A git', settings: { provider: 'HTTP', baseUrl: 'https://git.example.org' }, credentials: { token: 't' } }],
}, server.kernel);
const drives = await server.get('/api/v1/storage-drives', { key: adminA.key });

/** A's record ids by the path segment (or body field) that names their kind. */
const foreign: Record<string, string> = {
  projects: project, studies: study, assays: assay, 'assay-types': assayType, tasks: task, 'external-links': link,
  'study-collections': collection, relationships: relationship, keywords: keyword, collaborators: collaborator, teams: team,
  access: grant, 'storage-folders': folders.body.content[0].id, notes: boot.notes.n.id, 'organization-notes': boot.notes.n.id,
  integrations: boot.personalIntegrations.p.id, 'storage-drives': drives.body.content[0].id,
};
const fieldKinds: Record<string, string> = {
  projectId: 'projects', studyId: 'studies', targetStudyId: 'studies', assayId: 'assays', assayTypeId: 'assay-types', teamId: 'teams',
  driveId: 'storage-drives', integrationId: 'integrations', organizationUserId: 'organizationUser', userId: 'user', assignedToId: 'organizationUser',
};
const people: Record<string, string> = { organizationUser: userA.organizationUserId, user: userA.userId };

type Schema = { type?: string | string[]; format?: string; enum?: unknown[]; const?: unknown; properties?: Record<string, Schema>; required?: string[];
  items?: Schema; minItems?: number; minLength?: number; minimum?: number; anyOf?: Schema[]; oneOf?: Schema[]; allOf?: Schema[]; $ref?: string };

let serial = 0;

/** The smallest value `schema` accepts; ids of A's records (or random ids) where a field references a record. */
function sample(schema: Schema, name: string, ids: (kind: string) => string): unknown {
  const alt = schema.anyOf ?? schema.oneOf;
  if (alt) return sample(alt.find((s) => s.type !== 'null') ?? alt[0], name, ids);
  if (schema.allOf) return sample(Object.assign({}, ...schema.allOf), name, ids);
  if (schema.const !== undefined) return schema.const;
  if (schema.enum) return schema.enum[0];
  const type = Array.isArray(schema.type) ? schema.type.find((x) => x !== 'null') : schema.type;
  switch (type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const key of schema.required ?? []) out[key] = sample(schema.properties?.[key] ?? {}, key, ids);
      return out;
    }
    case 'array':
      return Array.from({ length: Math.max(schema.minItems ?? 0, 1) }, () => sample(schema.items ?? {}, name.replace(/s$/, ''), ids));
    case 'integer':
    case 'number':
      return Math.max(schema.minimum ?? 1, 1);
    case 'boolean':
      return true;
    case 'string':
      if (schema.format === 'uuid') return ids(fieldKinds[name] ?? '');
      if (schema.format === 'date') return '2026-01-01';
      if (schema.format === 'date-time') return '2026-01-01T00:00:00Z';
      if (schema.format === 'uri' || /url/i.test(name)) return 'https://example.org';
      // Unique, so two creates of the same operation do not collide on a unique name.
      return `x${++serial}`.padEnd(schema.minLength ?? 1, 'x');
    default:
      return 'x';
  }
}

const doc = (await server.get('/docs/api-docs/public-v1', { key: adminB.key })).body as {
  paths: Record<string, Record<string, { operationId: string; parameters?: { in: string; name: string; required?: boolean; schema: Schema }[];
    requestBody?: { content: Record<string, { schema: Schema }> } }>>;
};
const writes = Object.entries(doc.paths).flatMap(([path, ops]) =>
  Object.entries(ops).filter(([method]) => ['post', 'put', 'patch', 'delete'].includes(method)).map(([method, op]) => ({ path, method, op })));

t.ok(writes.length > 30, `${writes.length} write operations`);

/** The request for one operation: A's records (`foreignIds`) or random ids everywhere. */
function request(w: (typeof writes)[number], foreignIds: boolean) {
  const random = new Map<string, string>();
  const ids = (kind: string) => (foreignIds && (foreign[kind] ?? people[kind])) || random.get(kind) || (random.set(kind, crypto.randomUUID()), random.get(kind)!);
  const segments = w.path.split('/');
  const path = segments.map((s, i) => (/^\{.+\}$/.test(s) ? ids(segments[i - 1] === 'integrations' ? 'integrations' : segments[i - 1]) : s)).join('/');
  const query = (w.op.parameters ?? []).filter((p) => p.in === 'query' && p.required).map((p) => `${p.name}=${String(sample(p.schema, p.name, ids))}`);
  const schema = w.op.requestBody?.content['application/json']?.schema;
  return { url: path + (query.length ? `?${query.join('&')}` : ''), body: schema ? sample(schema, '', ids) : undefined };
}

t.test('every write names records of another organization exactly as it names nothing: never a 403', async (t) => {
  for (const who of [userB, adminB]) {
    for (const w of writes) {
      const real = request(w, true);
      const none = request(w, false);
      const a = await server.request(w.method.toUpperCase(), real.url, { key: who.key, body: real.body });
      const b = await server.request(w.method.toUpperCase(), none.url, { key: who.key, body: none.body });
      const what = `${w.method.toUpperCase()} ${w.path} as ${who === adminB ? 'admin' : 'user'} of another organization`;
      t.equal(a.status, b.status, `${what}: ${a.status} for A's records, ${b.status} for random ids`);
      if (/\{/.test(w.path)) t.not(a.status, 403, `${what}: not a 403`);
      t.ok(a.status < 500, `${what}: no 5xx (${a.text.slice(0, 200)})`);
    }
  }
});

t.test('organization A\'s records are unchanged', async (t) => {
  const teamNow = await server.get(`/api/v1/teams/${team}`, { key: adminA.key });
  t.same(teamNow.body.members.map((m: { id: string }) => m.id), [userA.organizationUserId]);
  t.equal(teamNow.body.name, 'A team');
  t.equal((await server.get(`/api/v1/projects/${project}`, { key: adminA.key })).status, 200);
  t.equal((await server.get(`/api/v1/studies/${study}/relationships`, { key: adminA.key })).body.totalElements, 1);
});
