import { randomUUID } from 'node:crypto';
import { db, type definePlugin, type EntityManager, errors, sql, VISIBILITIES } from '../../core/public.ts';
import type { AssayFieldDefinition } from '../assay-types/extensions.ts';
import { convertValue, toField } from './fields.ts';
import { insertRows, updateRows, type Column } from './bulk.ts';
import { FILE_SPECS, REQUIRED_FILES } from './format.ts';
import { INVERSE } from './mapping.ts';
import { emptyCounts, KINDS, Plans, type Report } from './plan.ts';
import { readExport, type Export, type FormatVersion } from './read.ts';
import { fail, readAll, type Warning } from './rows.ts';
import { openSource, SourceError, type ExportSource } from './source.ts';
import { checkStaged, stageActivity, stageTasks, writeActivity, writeTasks, type Resolved } from './stage.ts';

/** What an importer gets (core: `ImportContext`), named through the manifest's own type. */
export type ImportContext = Parameters<NonNullable<Parameters<typeof definePlugin>[0]['importers']>[string]['run']>[0];

/** Rolls a dry run's transaction back once it has counted everything. */
class DryRun extends Error {}

/** Steps of the progress display. */
const STEPS = 10;

/** At most this many warnings are listed; the rest are summed up in one more. */
const MAX_WARNINGS = 1000;


/**
 * Imports a Study Tracker data export (docs/import-study-tracker.md): reads and checks every
 * file, then writes everything in one transaction, as history (`labdata.history`: the records'
 * activity is moved in, not new). `options.dryRun` rolls that transaction back after counting.
 */
export async function importStudyTracker(ctx: ImportContext): Promise<Report> {
  const visibility = ctx.options.visibility ?? 'PUBLIC';
  if (!(VISIBILITIES as readonly string[]).includes(visibility)) throw new errors.BootstrapError(`import: --visibility must be one of ${VISIBILITIES.join(', ')}`);
  let source: ExportSource;
  try {
    source = await openSource(ctx.path);
  } catch (e) {
    throw e instanceof SourceError ? new errors.BootstrapError(e.message) : e;
  }
  try {
    const warnings: Warning[] = [];
    const missing = Object.keys(REQUIRED_FILES).filter((f) => !source.files.includes(f));
    if (missing.length) fail(missing[0], 0, `missing from the export${missing.length > 1 ? ` (so are ${missing.slice(1).join(', ')})` : ''}`);
    for (const file of source.files.filter((f) => !(f in FILE_SPECS))) warnings.push({ file, line: 0, message: 'unknown file: left out' });
    for (const file of source.others) warnings.push({ file, line: 0, message: 'not a CSV file of the export: left out' });
    ctx.progress('reading the export', 0, STEPS);
    // The 1.0.2 hotfix added GitRepositoryId to gitlab_repositories.csv: that header tells the versions apart.
    await readAll(source, 'gitlab_repositories.csv', FILE_SPECS['gitlab_repositories.csv'], warnings);
    const version = await formatVersion(source);
    const data = await readExport(source, warnings, version);
    const report: Report = { created: emptyCounts(), updated: emptyCounts(), unchanged: emptyCounts(), warnings: [] };
    try {
      await db.writeTransaction(ctx.em, async (tx) => {
        for (const counts of [report.created, report.updated, report.unchanged]) for (const k of KINDS) counts[k] = 0;
        const runWarnings = [...warnings];
        await importInto(tx, ctx, source, data, visibility, report, runWarnings);
        report.warnings = capped(runWarnings);
        if (ctx.options.dryRun) throw new DryRun();
      });
    } catch (e) {
      if (!(e instanceof DryRun)) throw e;
    }
    ctx.progress('done', STEPS, STEPS);
    return report;
  } finally {
    source.close();
  }
}

async function formatVersion(source: ExportSource): Promise<FormatVersion> {
  const stream = await source.open('gitlab_repositories.csv');
  let head = '';
  for await (const chunk of stream) {
    head += String(chunk);
    if (head.includes('\n')) break;
  }
  stream.destroy();
  return /"GitRepositoryId"/.test(head.split('\n')[0]) ? '1.0.2' : 'first';
}

function capped(warnings: Warning[]): Warning[] {
  if (warnings.length <= MAX_WARNINGS) return warnings;
  return [...warnings.slice(0, MAX_WARNINGS), { file: '', line: 0, message: `${warnings.length - MAX_WARNINGS} more warnings left out of this list` }];
}

const iso = (d: Date | null | undefined) => (d ? d.toISOString() : null);

async function importInto(tx: EntityManager, ctx: ImportContext, source: ExportSource, data: Export, visibility: string, report: Report, warnings: Warning[]): Promise<void> {
  const org = ctx.organizationId;
  // Two imports into one organization run one after the other; this one's rows are history.
  await db.query(tx, sql`select pg_advisory_xact_lock(hashtext(${`study-tracker:${org}`}))`);
  await db.query(tx, sql`select set_config('labdata.history', 'on', true)`);
  const plans = new Plans(report);
  for (const [kind, table] of [
    ['user', 'organization_user'], ['collaborator', 'collaborator'], ['keyword', 'keyword'], ['assay_type', 'assay_type'], ['program', 'project'],
    ['study', 'study'], ['assay', 'assay'], ['note', 'note'], ['link', 'external_link'], ['relationship', 'study_relationship'], ['collection', 'study_collection'],
  ] as const) await plans.load(tx, org, kind, table);

  ctx.progress('matching users', 1, STEPS);
  const { users, write: writeUsers } = await resolveUsers(tx, org, data, plans, warnings);
  const importUser = users.get(-1)!;
  const ou = (id: number | null | undefined, fallback: string) => (id === null || id === undefined ? fallback : users.get(id)!);

  // Organization records.
  const collaborators = new Map<number, string>();
  const collaboratorRows = { create: [] as object[], update: [] as object[] };
  for (const c of data.collaborators.values()) {
    const email = c.contactEmail && /^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(c.contactEmail) ? c.contactEmail : null;
    if (c.contactEmail && !email) warnings.push({ file: 'collaborators.csv', line: c.line, message: `ContactEmail "${c.contactEmail}" is not an e-mail address: left out` });
    const row = { label: c.label, organization_name: c.organizationName, organization_location: c.organizationLocation, contact_person_name: c.contactPersonName, contact_email: email, code: c.code, active: c.active };
    const { id, state } = plans.decide('collaborator', 'collaborators', c.id, row);
    collaborators.set(c.id, id);
    if (state === 'created') collaboratorRows.create.push({ id, organization_id: org, created_by_id: importUser, ...row });
    if (state === 'updated') collaboratorRows.update.push({ id, ...row });
  }

  const keywords = await planKeywords(tx, org, data, plans, importUser, warnings);

  const types = planAssayTypes(data, plans, org, warnings);
  await checkNames(tx, org, types, data);

  // Records.
  const projects = new Map<number, string>();
  const projectRows = { create: [] as object[], update: [] as object[] };
  for (const p of data.programs.values()) {
    const row = {
      code: p.code,
      name: p.name,
      // A project's description must not be blank here; a program may have none.
      description: p.description?.trim() ? p.description : p.name,
      archived: !p.active,
      created_by_id: ou(p.createdBy, importUser),
      created_at: iso(p.createdAt),
      updated_at: iso(p.updatedAt ?? p.createdAt),
    };
    const { id, state } = plans.decide('program', 'projects', p.id, row);
    projects.set(p.id, id);
    if (state === 'created') projectRows.create.push({ id, organization_id: org, visibility, status: 'ACTIVE', ...row });
    if (state === 'updated') projectRows.update.push({ id, ...row });
  }

  const studies = new Map<number, { id: string; projectId: string }>();
  const studyRows = { create: [] as object[], update: [] as object[] };
  const studyCollaborators: object[] = [];
  const members = new Set<string>();
  for (const s of data.studies.values()) {
    const projectId = projects.get(s.program)!;
    const row = {
      project_id: projectId,
      code: s.code,
      name: s.name,
      description: s.description,
      status: s.status,
      start_date: iso(s.startDate),
      archived: !s.active,
      created_by_id: ou(s.createdBy ?? s.owner, importUser),
      created_at: iso(s.createdAt),
      updated_at: iso(s.updatedAt ?? s.createdAt),
      collaborator_id: s.collaborator === null ? null : collaborators.get(s.collaborator)!,
    };
    const { id, state } = plans.decide('study', 'studies', s.id, row);
    studies.set(s.id, { id, projectId });
    const { collaborator_id, ...studyRow } = row;
    if (state === 'created') studyRows.create.push({ id, organization_id: org, ...studyRow });
    if (state === 'updated') studyRows.update.push({ id, ...studyRow });
    if (state !== 'unchanged') studyCollaborators.push({ study_id: id, collaborator_id });
    for (const u of [s.owner, ...s.users, ...(s.createdBy === null ? [] : [s.createdBy])]) members.add(`${projectId}/${users.get(u)}`);
  }
  for (const p of data.programs.values()) members.add(`${projects.get(p.id)}/${users.get(p.createdBy)}`);

  const assays: Resolved['assays'] = new Map();
  const assayRows = { create: [] as object[], update: [] as object[] };
  for (const a of data.assays.values()) {
    const study = studies.get(a.study)!;
    const type = types.byId.get(a.type)!;
    const row = {
      study_id: study.id,
      assay_type_id: type.id,
      code: a.code,
      name: a.name,
      description: a.description,
      status: a.status,
      start_date: iso(a.startDate),
      field_values: assayValues(JSON.parse(a.fields) as Record<string, unknown>, type, a.line, warnings),
      archived: !a.active,
      created_by_id: ou(a.createdBy ?? a.owner, importUser),
      created_at: iso(a.createdAt),
      updated_at: iso(a.updatedAt ?? a.createdAt),
    };
    const { id, state } = plans.decide('assay', 'assays', a.id, row);
    assays.set(a.id, { id, studyId: study.id, projectId: study.projectId, createdBy: row.created_by_id });
    if (state === 'created') assayRows.create.push({ id, organization_id: org, ...row });
    if (state === 'updated') assayRows.update.push({ id, ...row });
    for (const u of [a.owner, ...a.users, ...(a.createdBy === null ? [] : [a.createdBy])]) members.add(`${study.projectId}/${users.get(u)}`);
  }
  await checkCodes(tx, org, 'study', 'studies.csv', [...data.studies.values()].map((s) => ({ code: s.code, line: s.line, id: studies.get(s.id)!.id })));
  await checkCodes(tx, org, 'assay', 'assays.csv', [...data.assays.values()].map((a) => ({ code: a.code, line: a.line, id: assays.get(a.id)!.id })));

  const noteRows = { create: [] as object[], update: [] as object[] };
  for (const n of data.notes) {
    const conclusion = n.file === 'study_conclusions.csv';
    const row = { study: studies.get(n.study)!.id, content: n.content, created_by_id: users.get(n.createdBy)!, created_at: iso(n.createdAt), updated_at: iso(n.updatedAt ?? n.createdAt) };
    // Comments and conclusions have ids of their own (two tables): the key says which.
    const { id, state } = plans.decide('note', 'notes', `${conclusion ? 'conclusion' : 'comment'}:${n.id}`, row);
    const note = { id, type: conclusion ? 'CONCLUSION' : 'COMMENT', format: conclusion ? 'QUILL' : 'TEXT', ...row };
    if (state === 'created') noteRows.create.push(note);
    if (state === 'updated') noteRows.update.push(note);
  }

  const linkIds = new Map<string, string>();
  const linkRows = { create: [] as object[], update: [] as object[] };
  const parentOf = { program: (id: number) => projects.get(id)!, study: (id: number) => studies.get(id)!.id, assay: (id: number) => assays.get(id)!.id };
  for (const l of data.links) {
    const row = { parent_kind: l.kind === 'program' ? 'project' : l.kind, parent_id: parentOf[l.kind](l.parent), label: l.label.slice(0, 255), url: l.url };
    const { id, state } = plans.decide('link', 'externalLinks', l.key, row);
    linkIds.set(l.key, id);
    if (state === 'created') linkRows.create.push({ id, organization_id: org, created_by_id: importUser, ...row });
    if (state === 'updated') linkRows.update.push({ id, ...row });
  }

  // A relationship here is one row per direction, unique by (source, type, target); Study Tracker
  // keeps both directions too. Each of its rows maps to the row of the same three, made when missing
  // (with its inverse: the API always has both).
  const relationshipRows: object[] = [];
  const pairs = new Map(
    (await db.query<{ id: string; s: string; type: string; t: string }>(tx, sql`select id, source_study_id as s, type, target_study_id as t from study_relationship where organization_id = ${org}`))
      .map((r) => [`${r.s}|${r.type}|${r.t}`, r.id]),
  );
  const pair = (s: string, type: string, t: string, by: string) => {
    const key = `${s}|${type}|${t}`;
    let id = pairs.get(key);
    if (!id) {
      id = randomUUID();
      pairs.set(key, id);
      relationshipRows.push({ id, source_study_id: s, target_study_id: t, type, created_by_id: by });
    }
    return id;
  };
  for (const r of data.relationships) {
    if (r.source === r.target) {
      warnings.push({ file: 'study_relationships.csv', line: r.line, message: 'a study related to itself: left out' });
      continue;
    }
    const source = studies.get(r.source)!.id;
    const target = studies.get(r.target)!.id;
    const known = plans.target('relationship', r.id);
    const by = ou(data.studies.get(r.source)!.createdBy ?? data.studies.get(r.source)!.owner, importUser);
    const id = known && pairs.has(`${source}|${r.type}|${target}`) ? known : pair(source, r.type, target, by);
    pair(target, INVERSE[r.type], source, by);
    plans.decide('relationship', 'studyRelationships', r.id, { source, target, type: r.type }, id);
  }

  const collectionIds = new Map<number, string>();
  const collectionRows = { create: [] as object[], update: [] as object[] };
  const collectionStudies: object[] = [];
  for (const c of data.collections.values()) {
    const row = { name: c.name, description: c.description, visibility: c.shared ? 'PUBLIC' : 'PRIVATE', created_by_id: users.get(c.createdBy)!, created_at: iso(c.createdAt), updated_at: iso(c.updatedAt ?? c.createdAt), studies: c.studies };
    const { id, state } = plans.decide('collection', 'studyCollections', c.id, row);
    collectionIds.set(c.id, id);
    const { studies: members, ...collection } = row;
    if (state === 'created') collectionRows.create.push({ id, organization_id: org, ...collection });
    if (state === 'updated') collectionRows.update.push({ id, ...collection });
    if (state !== 'unchanged') for (const s of members) collectionStudies.push({ collection_id: id, study_id: studies.get(s)!.id, added_by_id: row.created_by_id, added_at: row.updated_at });
  }

  // The two big files stream into staging tables (checked row by row), then merge in SQL.
  const resolved: Resolved = {
    org, users, importUser, projects, studies, assays, collections: collectionIds, links: linkIds, types: types.byId, data,
    categoryOf: (type) => ctx.services.activity.categoryOf(type),
  };
  ctx.progress('reading assay_tasks.csv', 2, STEPS);
  await stageTasks(tx, source, resolved, warnings, (rows) => ctx.progress(`reading assay_tasks.csv: ${rows} rows`, 2, STEPS));
  ctx.progress('reading activity.csv', 3, STEPS);
  await stageActivity(tx, source, resolved, warnings, (rows) => ctx.progress(`reading activity.csv: ${rows} rows`, 3, STEPS));
  ctx.progress('checking tasks and activity', 4, STEPS);
  await checkStaged(tx);

  const memberPairs = [...members].map((m) => m.split('/')).map(([project_id, organization_user_id]) => ({ project_id, organization_user_id }));
  if (ctx.options.dryRun) {
    const [{ n }] = await db.query<{ n: number }>(
      tx,
      sql`select count(*)::int as n from json_to_recordset(${JSON.stringify(memberPairs)}::json) as x (project_id uuid, organization_user_id uuid)
           where not exists (select 1 from project_member pm where pm.project_id = x.project_id and pm.organization_user_id = x.organization_user_id)`,
    );
    report.created.projectMembers = n;
    report.unchanged.projectMembers = memberPairs.length - n;
    await writeTasks(tx, resolved, report, true);
    await writeActivity(tx, resolved, report, true);
    return;
  }

  ctx.progress('writing projects, studies and assays', 5, STEPS);
  await writeUsers();
  const C = (names: string, type = 'text'): Column[] => names.split(' ').map((n) => [n, type] as const);
  const uuid = (names: string) => C(names, 'uuid');
  const stamp = C('created_at updated_at', 'timestamptz');
  await insertRows(tx, 'collaborator', [...uuid('id organization_id created_by_id'), ...C('label organization_name organization_location contact_person_name contact_email code'), ['active', 'boolean']], collaboratorRows.create);
  await updateRows(tx, 'collaborator', [...uuid('id'), ...C('label organization_name organization_location contact_person_name contact_email code'), ['active', 'boolean']], collaboratorRows.update,
    `label = x.label, organization_name = x.organization_name, organization_location = x.organization_location, contact_person_name = x.contact_person_name,
     contact_email = x.contact_email, code = x.code, active = x.active, updated_at = now(), version = t.version + 1`);
  await insertRows(tx, 'keyword', [...uuid('id organization_id created_by_id'), ...C('value category')], keywords.create);
  await updateRows(tx, 'keyword', [...uuid('id'), ...C('category')], keywords.update, 'category = x.category');
  const typeColumns: Column[] = [...uuid('id'), ...C('name description status'), ...C('fields tasks', 'jsonb')];
  await insertRows(tx, 'assay_type', [...typeColumns, ...uuid('organization_id')], types.create);
  await updateRows(tx, 'assay_type', typeColumns, types.update,
    'name = x.name, description = x.description, status = x.status, fields = x.fields, tasks = x.tasks, updated_at = now(), version = t.version + 1');

  const projectColumns: Column[] = [...uuid('id created_by_id'), ...C('code name description'), ['archived', 'boolean'], ...stamp];
  await insertRows(tx, 'project', [...projectColumns, ...uuid('organization_id'), ...C('visibility status')], projectRows.create);
  await updateRows(tx, 'project', projectColumns, projectRows.update,
    'code = x.code, name = x.name, description = x.description, archived = x.archived, created_by_id = x.created_by_id, updated_at = x.updated_at, version = t.version + 1');
  report.created.projectMembers = await insertRows(tx, 'project_member', [...uuid('project_id organization_user_id')].concat([['id', 'uuid'], ['organization_id', 'uuid']]),
    memberPairs.map((m) => ({ ...m, id: randomUUID(), organization_id: org })), 'on conflict (project_id, organization_user_id) where organization_user_id is not null do nothing');
  report.unchanged.projectMembers = memberPairs.length - report.created.projectMembers;

  const studyColumns: Column[] = [...uuid('id project_id created_by_id'), ...C('code name description status'), ['start_date', 'timestamptz'], ['archived', 'boolean'], ...stamp];
  await insertRows(tx, 'study', [...studyColumns, ...uuid('organization_id')], studyRows.create);
  await updateRows(tx, 'study', studyColumns, studyRows.update,
    `project_id = x.project_id, code = x.code, name = x.name, description = x.description, status = x.status, start_date = x.start_date,
     archived = x.archived, created_by_id = x.created_by_id, updated_at = x.updated_at, version = t.version + 1`);
  await insertRows(tx, 'study_collaborator', [...uuid('study_id collaborator_id'), ['organization_id', 'uuid']],
    studyCollaborators.filter((s) => (s as { collaborator_id: string | null }).collaborator_id).map((s) => ({ ...s, organization_id: org })),
    'on conflict (study_id) do update set collaborator_id = excluded.collaborator_id');
  const cleared = studyCollaborators.filter((s) => !(s as { collaborator_id: string | null }).collaborator_id).map((s) => (s as { study_id: string }).study_id);
  if (cleared.length) await db.query(tx, sql`delete from study_collaborator where study_id in (select value::uuid from json_array_elements_text(${JSON.stringify(cleared)}::json))`);

  const assayColumns: Column[] = [...uuid('id study_id assay_type_id created_by_id'), ...C('code name description status'), ['start_date', 'timestamptz'], ['field_values', 'jsonb'], ['archived', 'boolean'], ...stamp];
  await insertRows(tx, 'assay', [...assayColumns, ...uuid('organization_id')], assayRows.create);
  await updateRows(tx, 'assay', assayColumns, assayRows.update,
    `study_id = x.study_id, code = x.code, name = x.name, description = x.description, status = x.status, start_date = x.start_date,
     field_values = x.field_values, archived = x.archived, created_by_id = x.created_by_id, updated_at = x.updated_at, version = t.version + 1`);
  // A study moved to another program (an assay to another study) takes its history along, as a move here does.
  const moved = [...studyRows.update, ...assayRows.update].map((r) => (r as { id: string }).id);
  if (moved.length) {
    const ids = sql`(select value::uuid from json_array_elements_text(${JSON.stringify(moved)}::json))`;
    await db.query(tx, sql`update activity a set project_id = s.project_id from study s where a.study_id = s.id and s.id in ${ids} and a.project_id is distinct from s.project_id`);
    await db.query(tx, sql`update activity a set study_id = x.study_id, project_id = s.project_id from assay x join study s on s.id = x.study_id
      where a.assay_id = x.id and x.id in ${ids} and (a.study_id is distinct from x.study_id or a.project_id is distinct from s.project_id)`);
  }

  ctx.progress('writing tasks', 6, STEPS);
  await writeTasks(tx, resolved, report, false);
  ctx.progress('writing notes, links, relationships and collections', 7, STEPS);

  for (let i = 0; i < noteRows.create.length; i += 2000) {
    const batch = JSON.stringify(noteRows.create.slice(i, i + 2000));
    await db.query(tx, sql`with x as (select * from json_to_recordset(${batch}::json) as x (id uuid, study uuid, created_by_id uuid, type text, format text, content text, created_at timestamptz, updated_at timestamptz)),
      n as (insert into note (id, organization_id, parent_kind, parent_id, type, format, archived, created_by_id, created_at, updated_at, current_version)
            select id, ${org}, 'study', study, type, format, false, created_by_id, created_at, updated_at, 1 from x returning id)
      insert into note_version (note_id, version, organization_id, content, created_by_id, created_at) select id, 1, ${org}, content, created_by_id, updated_at from x`);
  }
  for (let i = 0; i < noteRows.update.length; i += 2000) {
    const batch = JSON.stringify(noteRows.update.slice(i, i + 2000));
    // A changed comment or conclusion gets a new version, as an edit here does.
    await db.query(tx, sql`with x as (select * from json_to_recordset(${batch}::json) as x (id uuid, study uuid, created_by_id uuid, content text, updated_at timestamptz)),
      n as (update note t set current_version = t.current_version + 1, updated_at = x.updated_at, parent_id = x.study from x where t.id = x.id returning t.id, t.current_version)
      insert into note_version (note_id, version, organization_id, content, created_by_id, created_at)
      select n.id, n.current_version, ${org}, x.content, x.created_by_id, x.updated_at from n join x on x.id = n.id`);
  }

  await insertRows(tx, 'external_link', [...uuid('id organization_id created_by_id parent_id'), ...C('parent_kind label url')], linkRows.create);
  await updateRows(tx, 'external_link', [...uuid('id parent_id'), ...C('parent_kind label url')], linkRows.update,
    'parent_kind = x.parent_kind, parent_id = x.parent_id, label = x.label, url = x.url, updated_at = now(), version = t.version + 1');

  await insertRows(tx, 'study_relationship', [...uuid('id source_study_id target_study_id created_by_id'), ['type', 'text'], ['organization_id', 'uuid']],
    relationshipRows.map((r) => ({ ...r, organization_id: org })));

  await insertRows(tx, 'study_collection', [...uuid('id organization_id created_by_id'), ...C('name description visibility'), ...stamp], collectionRows.create);
  await updateRows(tx, 'study_collection', [...uuid('id'), ...C('name description visibility'), ['updated_at', 'timestamptz']], collectionRows.update,
    'name = x.name, description = x.description, visibility = x.visibility, updated_at = x.updated_at, version = t.version + 1');
  await insertRows(tx, 'study_collection_study', [...uuid('collection_id study_id added_by_id organization_id'), ['added_at', 'timestamptz']],
    collectionStudies.map((c) => ({ ...c, organization_id: org })), 'on conflict (collection_id, study_id) do nothing');

  ctx.progress('writing activity', 8, STEPS);
  await writeActivity(tx, resolved, report, false);
  ctx.progress('writing the map of Study Tracker ids', 9, STEPS);

  await insertRows(tx, 'study_tracker_map', [...uuid('organization_id target_id'), ...C('kind source_id fingerprint')], plans.maps.map((m) => ({ ...m, organization_id: org })),
    'on conflict (organization_id, kind, source_id) do update set target_id = excluded.target_id, fingerprint = excluded.fingerprint, imported_at = now()');
}

/**
 * Users → organization users, matched by e-mail (case-insensitive); a user with no account here
 * gets one (their display name), a user with an account but no membership a membership
 * (ORGANIZATION_USER; INACTIVE when Study Tracker had them inactive). Memberships already there
 * are left as they are. Key -1: the organization user the import files records under that name
 * nobody in the export (keywords, collaborators, links), "Study Tracker import".
 */
async function resolveUsers(tx: EntityManager, org: string, data: Export, plans: Plans, warnings: Warning[]): Promise<{ users: Map<number, string>; write(): Promise<void> }> {
  const out = new Map<number, string>();
  const emailOf = new Map<number, string>();
  for (const u of data.users.values()) {
    let email = u.email;
    if (!email || !/^[^@\s]+@[^@\s]+$/.test(email)) {
      email = /^[^@\s]+@[^@\s]+$/.test(u.username) ? u.username : `${u.username.replace(/[^A-Za-z0-9._-]/g, '_')}@study-tracker.invalid`;
      warnings.push({ file: 'users.csv', line: u.line, message: `no e-mail address: matched and created as ${email}` });
    }
    emailOf.set(u.id, email.toLowerCase());
  }
  emailOf.set(-1, `study-tracker-import+${org}@labdata.invalid`);
  const found = await db.query<{ email: string; userId: string; ou: string | null }>(
    tx,
    sql`select lower(u.email) as email, u.id as "userId", ou.id as ou from app_user u
          left join organization_user ou on ou.user_id = u.id and ou.organization_id = ${org}
         where lower(u.email) in (select json_array_elements_text(${JSON.stringify([...new Set(emailOf.values())])}::json))`,
  );
  const byEmail = new Map(found.map((f) => [f.email, f]));
  const appUsers: object[] = [];
  const memberships: object[] = [];
  const first = new Map<string, number>();
  for (const [id, email] of emailOf) {
    const st = data.users.get(id);
    if (first.has(email)) {
      out.set(id, out.get(first.get(email)!)!);
      warnings.push({ file: 'users.csv', line: st?.line ?? 0, message: `same e-mail address as user ${first.get(email)}: both are one user here` });
      continue;
    }
    first.set(email, id);
    const mapped = plans.target('user', id === -1 ? 'import' : id);
    const existing = byEmail.get(email);
    if (mapped) out.set(id, mapped);
    else if (existing?.ou) out.set(id, existing.ou);
    else {
      const userId = existing?.userId ?? randomUUID();
      if (!existing) appUsers.push({ id: userId, email, display_name: id === -1 ? 'Study Tracker import' : st!.displayName });
      const ouId = randomUUID();
      memberships.push({ id: ouId, organization_id: org, user_id: userId, status: id === -1 || !st!.active ? 'INACTIVE' : 'ACTIVE' });
      out.set(id, ouId);
    }
    const state = mapped || existing?.ou ? 'unchanged' : 'created';
    plans.report[state].users++;
    if (!mapped) plans.maps.push({ kind: 'user', source_id: id === -1 ? 'import' : String(id), target_id: out.get(id)!, fingerprint: null });
  }
  const write = async () => {
    await insertRows(tx, 'app_user', [['id', 'uuid'], ['email', 'text'], ['display_name', 'text']], appUsers);
    await insertRows(tx, 'organization_user', [['id', 'uuid'], ['organization_id', 'uuid'], ['user_id', 'uuid'], ['status', 'text'], ['roles', 'text[]']],
      memberships.map((m) => ({ ...m, roles: '{ORGANIZATION_USER}' })));
  };
  return { users: out, write };
}

/** Keywords: matched by value when the organization has it already (values are unique here). */
async function planKeywords(tx: EntityManager, org: string, data: Export, plans: Plans, importUser: string, warnings: Warning[]) {
  const existing = new Map(
    (await db.query<{ id: string; value: string }>(tx, sql`select id, value from keyword where organization_id = ${org}`)).map((k) => [k.value, k.id]),
  );
  const out = { ids: new Map<number, string>(), create: [] as object[], update: [] as object[] };
  const taken = new Map<string, number>();
  for (const k of data.keywords.values()) {
    const value = k.value.slice(0, 255);
    if (taken.has(value)) {
      // One value in two categories there is one keyword here (values are unique).
      out.ids.set(k.id, out.ids.get(taken.get(value)!)!);
      warnings.push({ file: 'keywords.csv', line: k.line, message: `keyword "${value}" is also in another category (ID ${taken.get(value)}): one keyword here` });
      plans.report.unchanged.keywords++;
      continue;
    }
    taken.set(value, k.id);
    const mapped = plans.target('keyword', k.id);
    const same = existing.get(value);
    if (!mapped && same) {
      // The organization has this keyword already: it is the one.
      out.ids.set(k.id, same);
      plans.report.unchanged.keywords++;
      plans.maps.push({ kind: 'keyword', source_id: String(k.id), target_id: same, fingerprint: null });
      continue;
    }
    const { id, state } = plans.decide('keyword', 'keywords', k.id, { value, category: k.category });
    out.ids.set(k.id, id);
    if (state === 'created') out.create.push({ id, organization_id: org, created_by_id: importUser, value, category: k.category });
    if (state === 'updated') out.update.push({ id, category: k.category });
  }
  return out;
}

interface PlannedType {
  id: string;
  name: string;
  /** Study Tracker field name → the field here (active fields and the others). */
  fields: Map<string, AssayFieldDefinition>;
  line: number;
}

/** An assay's Fields → its values here, by the type's fields; a value that fits no field is reported. */
function assayValues(fields: Record<string, unknown>, type: PlannedType, line: number, warnings: Warning[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(fields)) {
    if (value === null || value === '') continue;
    const field = type.fields.get(name);
    if (!field) {
      warnings.push({ file: 'assays.csv', line, message: `Fields has "${name}", which is no field of assay type "${type.name}": left out` });
      continue;
    }
    const converted = convertValue(field, value);
    if (converted === undefined) warnings.push({ file: 'assays.csv', line, message: `Fields.${name} ${JSON.stringify(value).slice(0, 80)} is not a ${field.type} value: left out` });
    else out[field.name] = converted;
  }
  return out;
}

/** Assay types with their fields (inactive ones left out of the type; their values stay on assays) and task templates. */
function planAssayTypes(data: Export, plans: Plans, org: string, warnings: Warning[]) {
  const byId = new Map<number, PlannedType>();
  const create: object[] = [];
  const update: object[] = [];
  for (const t of data.assayTypes.values()) {
    const names = new Set<string>();
    const all = new Map<string, AssayFieldDefinition>();
    const sorted = [...t.fields].sort((a, b) => a.order - b.order || a.id - b.id);
    for (const f of sorted) all.set(f.name, toField(f, names, warnings));
    const fields = sorted.filter((f) => f.active).map((f) => all.get(f.name)!);
    const tasks = [...t.tasks]
      .sort((a, b) => a.order - b.order || a.id - b.id)
      .map((task) => {
        const taskNames = new Set<string>();
        const taskFields = [...task.fields].filter((f) => f.active).sort((a, b) => a.order - b.order || a.id - b.id).map((f) => toField(f, taskNames, warnings));
        return { label: task.label.slice(0, 255), order: Math.max(0, task.order), fields: taskFields };
      });
    const row = { name: t.name.slice(0, 255), description: t.description, status: t.active ? 'ACTIVE' : 'INACTIVE', fields: JSON.stringify(fields), tasks: JSON.stringify(tasks) };
    const { id, state } = plans.decide('assay_type', 'assayTypes', t.id, row);
    byId.set(t.id, { id, name: t.name, fields: all, line: t.line });
    const stored = { ...row, fields, tasks };
    if (state === 'created') create.push({ id, organization_id: org, ...stored });
    if (state === 'updated') update.push({ id, ...stored });
  }
  return { byId, create, update };
}

/** An assay type name the organization uses already (for a type not from this export) cannot be imported. */
async function checkNames(tx: EntityManager, org: string, types: ReturnType<typeof planAssayTypes>, data: Export): Promise<void> {
  const ours = new Set([...types.byId.values()].map((t) => t.id));
  const live = await db.query<{ id: string; name: string }>(tx, sql`select id, lower(name) as name from assay_type where organization_id = ${org} and status <> 'DELETED'`);
  const taken = new Map(live.filter((t) => !ours.has(t.id)).map((t) => [t.name, t.id]));
  const seen = new Map<string, number>();
  for (const t of data.assayTypes.values()) {
    const key = t.name.toLowerCase();
    if (taken.has(key)) fail('assay_types.csv', t.line, `an assay type named "${t.name}" exists here already (id ${taken.get(key)}), not from this export: rename one of them`);
    if (seen.has(key)) fail('assay_types.csv', t.line, `assay type name "${t.name}" is used twice (also on line ${seen.get(key)}), and names are unique here`);
    seen.set(key, t.line);
  }
}

/** Codes are unique in the organization here (ignoring case): one taken by a record not from this export is an error. */
async function checkCodes(tx: EntityManager, org: string, table: 'study' | 'assay', file: string, records: { code: string | null; line: number; id: string }[]): Promise<void> {
  const coded = records.filter((r) => r.code !== null);
  const seen = new Map<string, number>();
  for (const r of coded) {
    const key = r.code!.toLowerCase();
    if (seen.has(key)) fail(file, r.line, `code "${r.code}" is used twice (also on line ${seen.get(key)}), and codes are unique here`);
    seen.set(key, r.line);
  }
  if (!coded.length) return;
  const ours = new Set(records.map((r) => r.id));
  const clashes = await db.query<{ id: string; code: string }>(
    tx,
    sql`select t.id, lower(t.code) as code from ${table === 'study' ? sql`study` : sql`assay`} t
         where t.organization_id = ${org} and lower(t.code) in (select lower(json_array_elements_text(${JSON.stringify(coded.map((r) => r.code))}::json)))`,
  );
  for (const c of clashes) {
    if (ours.has(c.id)) continue;
    const r = coded.find((x) => x.code!.toLowerCase() === c.code)!;
    fail(file, r.line, `code "${r.code}" is used here by another ${table} (${c.id}), not from this export`);
  }
}
