import { db, type EntityManager, raw, sql } from '../../core/public.ts';
import { BATCH, fingerprint, insertRows, pipelined, type Column } from './bulk.ts';
import { toField } from './fields.ts';
import { FILE_SPECS } from './format.ts';
import { EVENT_TYPES, historyType, OTHER_EVENT, STATUSES, TASK_STATUSES } from './mapping.ts';
import type { Report } from './plan.ts';
import { readField, userRef, type Export } from './read.ts';
import { fail, readTable, type Row, type Warning } from './rows.ts';
import type { ExportSource } from './source.ts';

/** The export's records with their ids here: what the big files' rows point at. */
export interface Resolved {
  org: string;
  users: Map<number, string>;
  importUser: string;
  projects: Map<number, string>;
  studies: Map<number, { id: string; projectId: string }>;
  assays: Map<number, { id: string; studyId: string; projectId: string; createdBy: string }>;
  collections: Map<number, string>;
  links: Map<string, string>;
  types: Map<number, { id: string }>;
  categoryOf(eventType: string): string | undefined;
  data: Export;
}

/** Hears how many rows of a big file have been read. */
type Progress = (rows: number) => void;
const EVERY = 100_000;

const TASK_COLUMNS: Column[] = [
  ['src', 'text'], ['line', 'int'], ['assay_id', 'uuid'], ['label', 'text'], ['status', 'text'], ['position', 'int'], ['due_date', 'timestamptz'],
  ['assigned_to_id', 'uuid'], ['created_by_id', 'uuid'], ['created_at', 'timestamptz'], ['updated_at', 'timestamptz'], ['completed_at', 'timestamptz'],
  ['completed_by_id', 'uuid'], ['data', 'jsonb'], ['fp', 'text'],
];
const FIELD_COLUMNS: Column[] = [['task', 'text'], ['line', 'int'], ['ord', 'int'], ['fid', 'bigint'], ['field', 'jsonb']];
const ACTIVITY_COLUMNS: Column[] = [
  ['src', 'text'], ['line', 'int'], ['project_id', 'uuid'], ['study_id', 'uuid'], ['assay_id', 'uuid'], ['event_type', 'text'], ['category', 'text'],
  ['data', 'jsonb'], ['date', 'timestamptz'], ['ou', 'uuid'], ['ref_kind', 'text'], ['ref_id', 'uuid'],
];

const tableSql = (name: string, columns: Column[], extra = '') =>
  raw(`create temp table ${name} (${columns.map(([n, t]) => `"${n}" ${t}`).join(', ')}${extra}) on commit drop`);

/** Streams rows of `file` in batches into `table`; `map` turns a row into its staged form. */
async function stream(tx: EntityManager, source: ExportSource, file: string, table: string, columns: Column[], warnings: Warning[], progress: Progress, map: (row: Row) => object | undefined): Promise<number> {
  const { rows } = await readTable(source, file, FILE_SPECS[file], warnings);
  let batch: object[] = [];
  let n = 0;
  // One batch in the database while the next is read: parsing (here) and inserting overlap.
  await pipelined(async (send) => {
    for await (const row of rows) {
      const staged = map(row);
      if (staged) batch.push(staged);
      if (batch.length >= BATCH * 2) {
        const full = batch;
        batch = [];
        await send(() => insertRows(tx, table, columns, full));
      }
      if (++n % EVERY === 0) progress(n);
    }
    await send(() => insertRows(tx, table, columns, batch));
  });
  return n;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** assay_task_fields.csv and assay_tasks.csv → st_task_field, st_task (checked row by row). */
export async function stageTasks(tx: EntityManager, source: ExportSource, r: Resolved, warnings: Warning[], progress: Progress): Promise<void> {
  await db.query(tx, tableSql('st_task_field', FIELD_COLUMNS));
  await db.query(tx, tableSql('st_task', TASK_COLUMNS, ', fields jsonb not null default \'[]\', target uuid, state text'));
  const names = new Map<string, Set<string>>();
  await stream(tx, source, 'assay_task_fields.csv', 'st_task_field', FIELD_COLUMNS, warnings, progress, (row) => {
    const f = readField(row, 'AssayTaskId');
    if (!f.active) return undefined;
    const task = String(f.parent);
    // Names are made unique per task; the fields of one task come together in the export, so the set stays small.
    if (!names.has(task)) {
      names.clear();
      names.set(task, new Set());
    }
    return { task, line: f.line, ord: f.order, fid: f.id, field: toField(f, names.get(task)!, warnings) };
  });
  const user = (row: Row, column: string) => {
    const id = userRef(r.data.users, row, row.id(column));
    return id === null ? null : r.users.get(id)!;
  };
  await stream(tx, source, 'assay_tasks.csv', 'st_task', TASK_COLUMNS, warnings, progress, (row) => {
    const assayId = row.requiredId('AssayId');
    const assay = r.assays.get(assayId) ?? row.fail(`no assay with ID ${assayId} in assays.csv`);
    const status = row.oneOf('Status', TASK_STATUSES);
    const createdAt = row.requiredDate('CreatedAt');
    const updatedAt = row.date('UpdatedAt') ?? createdAt;
    const createdBy = user(row, 'CreatedBy') ?? assay.createdBy;
    const modifiedBy = user(row, 'LastModifiedBy') ?? createdBy;
    const done = status === 'COMPLETE' || status === 'INCOMPLETE';
    // The first version writes a task without data as null, the 1.0.2 hotfix as {}: both are none.
    const staged = {
      assay_id: assay.id,
      label: row.required('Label').slice(0, 500),
      status,
      position: Math.min(100000, Math.max(0, row.int('Order') ?? 0)),
      due_date: iso(row.date('DueDate')),
      assigned_to_id: user(row, 'AssignedTo'),
      created_by_id: createdBy,
      created_at: createdAt.toISOString(),
      updated_at: updatedAt.toISOString(),
      completed_at: done ? updatedAt.toISOString() : null,
      completed_by_id: done ? modifiedBy : null,
      data: row.object('Data'),
    };
    return { src: String(row.requiredId('ID')), line: row.line, ...staged, fp: fingerprint(staged) };
  });
}

/** activity.csv → st_activity: each event on its records here, with its dotted type, category, date and user. */
export async function stageActivity(tx: EntityManager, source: ExportSource, r: Resolved, warnings: Warning[], progress: Progress): Promise<void> {
  await db.query(tx, tableSql('st_activity', ACTIVITY_COLUMNS));
  const unknown = new Set<string>();
  await stream(tx, source, 'activity.csv', 'st_activity', ACTIVITY_COLUMNS, warnings, progress, (row) => {
    const id = row.requiredId('ID');
    let projectId: string | null = null;
    let studyId: string | null = null;
    let assayId: string | null = null;
    const assay = row.id('AssayId');
    const study = row.id('StudyId');
    const program = row.id('ProgramId');
    // Study Tracker files an assay's events under the assay only, a study's under the study: here
    // an event also sits under the records above it.
    if (assay !== null) {
      const a = r.assays.get(assay) ?? row.fail(`no assay with ID ${assay} in assays.csv`);
      [projectId, studyId, assayId] = [a.projectId, a.studyId, a.id];
    }
    if (study !== null) {
      const s = r.studies.get(study) ?? row.fail(`no study with ID ${study} in studies.csv`);
      if (!studyId) [projectId, studyId] = [s.projectId, s.id];
    }
    if (program !== null) {
      const p = r.projects.get(program) ?? row.fail(`no program with ID ${program} in programs.csv`);
      if (!projectId) projectId = p;
    }
    const userId = userRef(r.data.users, row, row.id('User'));
    const eventType = row.required('EventType');
    const original = row.json('Data');
    const data = original && typeof original === 'object' && !Array.isArray(original) ? (original as Record<string, unknown>) : {};
    const mapped = EVENT_TYPES[eventType];
    const type = mapped ?? historyType(eventType);
    if (type === OTHER_EVENT && !unknown.has(eventType)) {
      unknown.add(eventType);
      warnings.push({ file: 'activity.csv', line: row.line, message: `event type ${eventType} is not one Study Tracker is known to write: imported as ${OTHER_EVENT}` });
    }
    const { payload, ref } = mapped ? eventData(eventType, data, r) : { payload: data, ref: undefined };
    return {
      src: String(id),
      line: row.line,
      project_id: projectId,
      study_id: studyId,
      assay_id: assayId,
      event_type: type,
      category: r.categoryOf(type),
      data: { ...payload, studyTracker: { id, eventType } },
      date: row.requiredDate('Date').toISOString(),
      ou: userId === null ? r.importUser : r.users.get(userId)!,
      ref_kind: ref?.kind ?? null,
      ref_id: ref?.id ?? null,
    };
  });
}

const idOf = (v: unknown): number | undefined => {
  const id = (v as { id?: unknown } | null | undefined)?.id;
  return typeof id === 'number' ? id : typeof id === 'string' && /^\d+$/.test(id) ? Number(id) : undefined;
};
const text = (v: unknown, key: string): string | null => {
  const x = (v as Record<string, unknown> | null | undefined)?.[key];
  return typeof x === 'string' ? x : null;
};

/** The data of an event with a counterpart here, in that event's shape, from Study Tracker's (views of the records). */
function eventData(eventType: string, d: Record<string, unknown>, r: Resolved): { payload: Record<string, unknown>; ref?: { kind: string; id: string } } {
  const status = (s: unknown) => (typeof s === 'string' && s in STATUSES ? STATUSES[s as keyof typeof STATUSES] : s ?? null);
  const study = (v: unknown) => (idOf(v) === undefined ? null : (r.studies.get(idOf(v)!)?.id ?? null));
  const project = (v: unknown) => (idOf(v) === undefined ? null : (r.projects.get(idOf(v)!) ?? null));
  const collection = (v: unknown) => (idOf(v) === undefined ? null : (r.collections.get(idOf(v)!) ?? null));
  switch (eventType) {
    case 'STUDY_STATUS_CHANGED':
    case 'ASSAY_STATUS_CHANGED':
      return { payload: { oldStatus: status(d.oldStatus), newStatus: status(d.newStatus) } };
    case 'NEW_PROGRAM':
      return { payload: { code: text(d.program, 'code'), name: text(d.program, 'name') } };
    case 'NEW_STUDY':
      return { payload: { name: text(d.study, 'name') } };
    case 'NEW_ASSAY': {
      const assay = idOf(d.assay) === undefined ? undefined : r.data.assays.get(idOf(d.assay)!);
      return { payload: { name: text(d.assay, 'name'), assayTypeId: assay ? (r.types.get(assay.type)?.id ?? null) : null } };
    }
    case 'DELETED_PROGRAM':
    case 'DELETED_STUDY':
    case 'DELETED_ASSAY':
      return { payload: { archived: true } };
    case 'RESTORED_STUDY':
    case 'RESTORED_ASSAY':
      return { payload: { archived: false } };
    case 'UPDATED_PROGRAM':
    case 'UPDATED_STUDY':
    case 'UPDATED_ASSAY':
      return { payload: { fields: [] } };
    case 'MOVED_STUDY':
      return { payload: { fromProjectId: project(d.oldProgram), toProjectId: project(d.newProgram) } };
    case 'MOVED_ASSAY':
      return { payload: { fromStudyId: study(d.oldStudy), toStudyId: study(d.newStudy) } };
    case 'ASSAY_TASK_ADDED':
    case 'ASSAY_TASK_DELETED':
      return { payload: { taskId: null, label: text(d.task, 'label') } };
    case 'ASSAY_TASK_UPDATED':
      return { payload: { taskId: null, label: text(d.task, 'label'), fields: [] } };
    case 'NEW_STUDY_RELATIONSHIP': {
      const target = study(d.targetStudy);
      return { payload: { type: text(d.relationship, 'type'), targetStudyId: target }, ref: target ? { kind: 'study', id: target } : undefined };
    }
    case 'DELETED_STUDY_RELATIONSHIP':
      return { payload: { type: null, targetStudyId: null } };
    case 'NEW_STUDY_EXTERNAL_LINK':
    case 'UPDATED_STUDY_EXTERNAL_LINK':
    case 'DELETED_STUDY_EXTERNAL_LINK': {
      const link = idOf(d.link) === undefined ? null : (r.links.get(String(idOf(d.link))) ?? null);
      return { payload: { linkId: link, label: text(d.link, 'label'), url: text(d.link, 'url'), ...(eventType.startsWith('UPDATED') ? { fields: [] } : {}) } };
    }
    case 'NEW_ASSAY_TYPE':
    case 'UPDATED_ASSAY_TYPE':
    case 'DELETED_ASSAY_TYPE': {
      const type = idOf(d.assayType) === undefined ? null : (r.types.get(idOf(d.assayType)!)?.id ?? null);
      return { payload: { assayTypeId: type, name: text(d.assayType, 'name'), ...(eventType.startsWith('UPDATED') ? { fields: [] } : {}) } };
    }
    case 'NEW_STUDY_COLLECTION':
    case 'UPDATED_STUDY_COLLECTION':
    case 'DELETED_STUDY_COLLECTION':
      return { payload: { collectionId: collection(d.collection), name: text(d.collection, 'name'), ...(eventType.startsWith('UPDATED') ? { fields: [] } : {}) } };
    case 'STUDY_ADDED_TO_COLLECTION':
    case 'STUDY_REMOVED_FROM_COLLECTION': {
      const c = collection(d.collection);
      const s = idOf(d.study) === undefined ? undefined : r.studies.get(idOf(d.study)!);
      return { payload: { collectionId: c, studyId: s?.id ?? null, projectId: s?.projectId ?? null }, ref: c ? { kind: 'study_collection', id: c } : undefined };
    }
    default:
      // Collaborators: the label is what this service's own events carry.
      return { payload: { label: text(d.collaborator, 'label'), ...(eventType.startsWith('UPDATED') ? { fields: [] } : {}) } };
  }
}

/** The staged rows must be whole: an id twice is an error, as a task field of a task not there. */
export async function checkStaged(tx: EntityManager): Promise<void> {
  await db.query(tx, sql`create index on st_task (src)`);
  await db.query(tx, sql`create index on st_activity (src)`);
  for (const [table, file] of [['st_task', 'assay_tasks.csv'], ['st_activity', 'activity.csv']] as const) {
    const dup = await db.queryOne<{ src: string; first: number; again: number }>(
      tx,
      sql`select src, min(line) as first, max(line) as again from ${raw(table)} group by src having count(*) > 1 order by 3 limit 1`,
    );
    if (dup) fail(file, dup.again, `ID ${dup.src} appears twice (first on line ${dup.first})`);
  }
  const orphan = await db.queryOne<{ line: number; task: string }>(
    tx,
    sql`select f.line, f.task from st_task_field f where not exists (select 1 from st_task t where t.src = f.task) order by f.line limit 1`,
  );
  if (orphan) fail('assay_task_fields.csv', orphan.line, `no assay task with ID ${orphan.task} in assay_tasks.csv`);
  await db.query(tx, sql`update st_task t set fields = f.fields
    from (select task, jsonb_agg(field order by ord, fid) as fields from st_task_field group by task) f where f.task = t.src`);
  // What is written includes the form: a changed form is a changed task.
  await db.query(tx, sql`update st_task set fp = md5(fp || fields::text)`);
}

/** Tasks: created, updated (their fingerprint changed) or unchanged, against the map; written unless `dryRun`. */
export async function writeTasks(tx: EntityManager, r: Resolved, report: Report, dryRun: boolean): Promise<void> {
  await db.query(tx, sql`update st_task s set target = m.target_id, state = case when m.fingerprint = s.fp then 'unchanged' else 'updated' end
    from study_tracker_map m where m.organization_id = ${r.org} and m.kind = 'task' and m.source_id = s.src and exists (select 1 from task t where t.id = m.target_id)`);
  await db.query(tx, sql`update st_task set target = gen_random_uuid(), state = 'created' where target is null`);
  for (const c of await db.query<{ state: 'created' | 'updated' | 'unchanged'; n: number }>(tx, sql`select state, count(*)::int as n from st_task group by state`)) report[c.state].tasks = c.n;
  if (dryRun) return;
  await db.query(tx, sql`insert into task (id, organization_id, parent_kind, parent_id, label, status, due_date, assigned_to_id, position, fields, data,
      completed_at, completed_by_id, created_by_id, created_at, updated_at)
    select target, ${r.org}, 'assay', assay_id, label, status, due_date, assigned_to_id, position, fields, data, completed_at, completed_by_id, created_by_id, created_at, updated_at
      from st_task where state = 'created'`);
  await db.query(tx, sql`update task t set parent_id = s.assay_id, label = s.label, status = s.status, due_date = s.due_date, assigned_to_id = s.assigned_to_id,
      position = s.position, fields = s.fields, data = s.data, completed_at = s.completed_at, completed_by_id = s.completed_by_id, created_by_id = s.created_by_id, updated_at = s.updated_at,
      version = t.version + 1
    from st_task s where s.state = 'updated' and t.id = s.target`);
  await db.query(tx, sql`insert into study_tracker_map (organization_id, kind, source_id, target_id, fingerprint)
    select ${r.org}, 'task', src, target, fp from st_task where state <> 'unchanged'
    on conflict (organization_id, kind, source_id) do update set target_id = excluded.target_id, fingerprint = excluded.fingerprint, imported_at = now()`);
}

/**
 * The id an event of Study Tracker gets here: derived from the organization and its Study Tracker
 * id (md5, with the version and variant bits of a v4 UUID), so that a later run finds the events
 * it moved in already by their primary key, with no map row per event (a million of them would
 * cost the import a tenth of its time).
 */
const eventId = (org: unknown) => sql`overlay(overlay(md5(${org}::text || '/activity/' || s.src) placing '4' from 13 for 1) placing '8' from 17 for 1)::uuid`;

/** Activity: history never changes, so a record imported before is unchanged; the others are moved in. */
export async function writeActivity(tx: EntityManager, r: Resolved, report: Report, dryRun: boolean): Promise<void> {
  const known = sql`from st_activity s where exists (select 1 from activity a where a.id = ${eventId(r.org)})`;
  const [{ total }] = await db.query<{ total: number }>(tx, sql`select count(*)::int as total from st_activity`);
  const [{ n }] = await db.query<{ n: number }>(tx, sql`select count(*)::int as n ${known}`);
  report.unchanged.activity = n;
  report.created.activity = total - n;
  if (dryRun) return;
  if (n) await db.query(tx, sql`delete ${known}`);
  await db.query(tx, sql`insert into activity (id, organization_id, event_type, category, data, date, project_id, study_id, assay_id, organization_user_id, ref_kind, ref_id)
    select ${eventId(r.org)}, ${r.org}, event_type, category, data, date, project_id, study_id, assay_id, ou, ref_kind, ref_id from st_activity s`);
}
