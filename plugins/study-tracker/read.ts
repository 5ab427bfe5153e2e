import type { ExportSource } from './source.ts';
import { FILE_SPECS } from './format.ts';
import { fail, readAll, type Row, type Warning } from './rows.ts';
import { FIELD_TYPES, RELATIONSHIP_TYPES, ST_FIELD_TYPES, ST_STATUSES, STATUSES, type RelationshipType } from './mapping.ts';

/** The two versions of the format (docs/import-study-tracker.md, "Two versions"). */
export type FormatVersion = 'first' | '1.0.2';

export interface StUser { id: number; line: number; username: string; displayName: string; email: string | null; active: boolean }
export interface StProgram { id: number; line: number; code: string; name: string; description: string | null; createdBy: number; createdAt: Date; updatedAt: Date | null; active: boolean }
export interface StField { id: number; line: number; file: string; parent: number; name: string; displayName: string; type: (typeof FIELD_TYPES)[keyof typeof FIELD_TYPES]; required: boolean; description: string | null; active: boolean; order: number; options: string[] | null; defaultValue: string | null }
export interface StAssayType { id: number; line: number; name: string; description: string | null; active: boolean; fields: StField[]; tasks: StTypeTask[] }
export interface StTypeTask { id: number; line: number; type: number; label: string; order: number; fields: StField[] }
export interface StStudy {
  id: number; line: number; program: number; code: string | null; status: string; name: string; description: string | null; collaborator: number | null;
  active: boolean; createdBy: number | null; startDate: Date | null; createdAt: Date; updatedAt: Date | null; owner: number; users: number[]; keywords: number[];
}
export interface StAssay {
  id: number; line: number; type: number; study: number; code: string | null; name: string; description: string | null; status: string;
  createdBy: number | null; owner: number; createdAt: Date; updatedAt: Date | null; startDate: Date | null; active: boolean; users: number[];
  /** `Fields`, as JSON text. */
  fields: string;
}
export interface StNote { id: number; line: number; file: string; study: number; content: string; createdBy: number; createdAt: Date; updatedAt: Date | null }
export interface StLink { key: string; line: number; file: string; kind: 'program' | 'study' | 'assay'; parent: number; label: string; url: string }
export interface StRelationship { id: number; line: number; type: RelationshipType; source: number; target: number }
export interface StCollection { id: number; line: number; name: string; description: string | null; shared: boolean; createdBy: number; createdAt: Date; updatedAt: Date | null; studies: number[] }
export interface StCollaborator { id: number; line: number; label: string; code: string | null; organizationName: string | null; organizationLocation: string | null; contactPersonName: string | null; contactEmail: string | null; active: boolean }
export interface StKeyword { id: number; line: number; value: string; category: string | null }

/** The whole export but its two big files (tasks and activity, streamed later), read and checked. */
export interface Export {
  version: FormatVersion;
  users: Map<number, StUser>;
  programs: Map<number, StProgram>;
  assayTypes: Map<number, StAssayType>;
  /** Task templates by id (their fields are on them). */
  typeTasks: Map<number, StTypeTask>;
  studies: Map<number, StStudy>;
  assays: Map<number, StAssay>;
  collaborators: Map<number, StCollaborator>;
  keywords: Map<number, StKeyword>;
  collections: Map<number, StCollection>;
  relationships: StRelationship[];
  notes: StNote[];
  links: StLink[];
}

/** A user reference: it must be a row of users.csv. */
export function userRef(users: Map<number, StUser>, row: Row, id: number | null): number | null {
  if (id !== null && !users.has(id)) row.fail(`no user with ID ${id} in users.csv`);
  return id;
}

function byId<T extends { id: number; line: number }>(rows: T[], file: string): Map<number, T> {
  const out = new Map<number, T>();
  for (const r of rows) {
    if (out.has(r.id)) fail(file, r.line, `ID ${r.id} appears twice (first on line ${out.get(r.id)!.line})`);
    out.set(r.id, r);
  }
  return out;
}

/** Java's Object.toString() of a user (the first version's assay CreatedBy): names no user. */
const JAVA_OBJECT = /^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*(\$\w+)*@[0-9a-f]+$/;

export async function readExport(source: ExportSource, warnings: Warning[], version: FormatVersion): Promise<Export> {
  const all = <T = Row>(file: string, map?: (row: Row) => T) => readAll<T>(source, file, FILE_SPECS[file], warnings, map);
  const has = (file: string) => source.files.includes(file);

  const users = byId(
    await all('users.csv', (r) => ({
      id: r.requiredId('ID'),
      line: r.line,
      username: r.required('Username'),
      displayName: r.text('DisplayName') ?? r.required('Username'),
      email: r.text('Email')?.trim() || null,
      active: r.bool('Active'),
    })),
    'users.csv',
  );
  const user = (r: Row, column: string) => userRef(users, r, r.id(column));
  const requiredUser = (r: Row, column: string) => userRef(users, r, r.requiredId(column))!;

  const collaborators = byId(
    await all('collaborators.csv', (r) => ({
      id: r.requiredId('ID'),
      line: r.line,
      label: r.required('Label'),
      code: r.text('Code'),
      organizationName: r.text('OrganizationName'),
      organizationLocation: r.text('OrganizationLocation'),
      contactPersonName: r.text('ContactPersonName'),
      contactEmail: r.text('ContactEmail'),
      active: r.bool('Active'),
    })),
    'collaborators.csv',
  );
  const keywords = byId(
    await all('keywords.csv', (r) => ({ id: r.requiredId('ID'), line: r.line, value: r.required('Keyword').trim(), category: r.text('Category')?.trim() || null })),
    'keywords.csv',
  );

  const field = readField;
  const assayTypes = byId(
    await all('assay_types.csv', (r) => ({ id: r.requiredId('ID'), line: r.line, name: r.required('Name').trim(), description: r.text('Description'), active: r.bool('Active'), fields: [] as StField[], tasks: [] as StTypeTask[] })),
    'assay_types.csv',
  );
  for (const f of byId(await all('assay_type_fields.csv', (r) => field(r, 'AssayTypeId')), 'assay_type_fields.csv').values()) {
    const type = assayTypes.get(f.parent);
    if (!type) fail(f.file, f.line, `no assay type with ID ${f.parent} in assay_types.csv`);
    type.fields.push(f);
  }
  const typeTasks = byId(
    await all('assay_type_tasks.csv', (r) => {
      r.required('Status');
      return { id: r.requiredId('ID'), line: r.line, type: r.requiredId('AssayTypeId'), label: r.required('Label'), order: r.int('Order') ?? 0, fields: [] as StField[] };
    }),
    'assay_type_tasks.csv',
  );
  for (const t of typeTasks.values()) {
    const type = assayTypes.get(t.type);
    if (!type) fail('assay_type_tasks.csv', t.line, `no assay type with ID ${t.type} in assay_types.csv`);
    type.tasks.push(t);
  }
  for (const f of byId(await all('assay_type_task_fields.csv', (r) => field(r, 'AssayTypeTaskId')), 'assay_type_task_fields.csv').values()) {
    const task = typeTasks.get(f.parent);
    if (!task) fail(f.file, f.line, `no assay type task with ID ${f.parent} in assay_type_tasks.csv`);
    task.fields.push(f);
  }

  const programs = byId(
    await all('programs.csv', (r) => ({
      id: r.requiredId('ID'),
      line: r.line,
      code: r.required('Code'),
      name: r.required('Name'),
      description: r.text('Description'),
      createdBy: requiredUser(r, 'CreatedBy'),
      createdAt: r.requiredDate('CreatedAt'),
      updatedAt: r.date('UpdatedAt'),
      active: r.bool('Active'),
    })),
    'programs.csv',
  );

  const studies = byId(
    await all('studies.csv', (r) => {
      const program = r.requiredId('ProgramId');
      if (!programs.has(program)) r.fail(`no program with ID ${program} in programs.csv`);
      const collaborator = r.id('CollaboratorId');
      if (collaborator !== null && !collaborators.has(collaborator)) r.fail(`no collaborator with ID ${collaborator} in collaborators.csv`);
      const keywordIds = r.ids('Keywords');
      const missing = keywordIds.find((k) => !keywords.has(k));
      if (missing !== undefined) r.fail(`no keyword with ID ${missing} in keywords.csv`);
      const members = r.ids('Users');
      for (const u of members) userRef(users, r, u);
      return {
        id: r.requiredId('ID'),
        line: r.line,
        program,
        code: r.text('Code'),
        status: STATUSES[r.oneOf('Status', ST_STATUSES)],
        name: r.required('Name'),
        description: r.text('Description'),
        collaborator,
        active: r.bool('Active'),
        createdBy: user(r, 'CreatedBy'),
        startDate: r.date('StartDate'),
        createdAt: r.requiredDate('CreatedAt'),
        updatedAt: r.date('UpdatedAt'),
        owner: requiredUser(r, 'Owner'),
        users: members,
        keywords: keywordIds,
      };
    }),
    'studies.csv',
  );

  const assays = byId(
    await all('assays.csv', (r) => {
      const type = r.requiredId('AssayTypeId');
      if (!assayTypes.has(type)) r.fail(`no assay type with ID ${type} in assay_types.csv`);
      const study = r.requiredId('StudyId');
      if (!studies.has(study)) r.fail(`no study with ID ${study} in studies.csv`);
      // The first version writes the creator as Java's toString() of the user object, which
      // names no user: the owner stands in. The 1.0.2 hotfix writes the id.
      const rawCreator = r.text('CreatedBy');
      let createdBy: number | null = null;
      if (rawCreator !== null && /^[0-9]+$/.test(rawCreator)) createdBy = userRef(users, r, Number(rawCreator));
      else if (rawCreator !== null && !JAVA_OBJECT.test(rawCreator)) r.fail(`CreatedBy "${rawCreator}" is neither a user id nor a user object's toString()`);
      else if (rawCreator !== null && version === '1.0.2') r.fail(`CreatedBy "${rawCreator}" is not a user id (this export's gitlab_repositories.csv says it is of the 1.0.2 format, which writes ids)`);
      const members = r.ids('Users');
      for (const u of members) userRef(users, r, u);
      return {
        id: r.requiredId('ID'),
        line: r.line,
        type,
        study,
        code: r.text('Code'),
        name: r.required('Name'),
        description: r.text('Description'),
        status: STATUSES[r.oneOf('Status', ST_STATUSES)],
        createdBy,
        owner: requiredUser(r, 'Owner'),
        createdAt: r.requiredDate('CreatedAt'),
        updatedAt: r.date('UpdatedAt'),
        startDate: r.date('StartDate'),
        active: r.bool('Active'),
        users: members,
        fields: r.objectText('Fields'),
      };
    }),
    'assays.csv',
  );

  const studyOf = (r: Row, column = 'StudyId') => {
    const id = r.requiredId(column);
    if (!studies.has(id)) r.fail(`no study with ID ${id} in studies.csv`);
    return id;
  };
  const notes: StNote[] = [];
  for (const [file, content] of [['study_comments.csv', 'Text'], ['study_conclusions.csv', 'Content']] as const) {
    const rows = await all(file, (r) => ({
      id: r.requiredId('ID'),
      line: r.line,
      file,
      study: studyOf(r),
      content: r.text(content) ?? '',
      createdBy: requiredUser(r, 'CreatedBy'),
      createdAt: r.requiredDate('CreatedAt'),
      updatedAt: r.date('UpdatedAt'),
    }));
    notes.push(...byId(rows, file).values());
  }

  const relationships = [
    ...byId(
      await all('study_relationships.csv', (r) => ({
        id: r.requiredId('ID'),
        line: r.line,
        type: r.oneOf('Type', RELATIONSHIP_TYPES),
        source: studyOf(r, 'SourceStudyId'),
        target: studyOf(r, 'TargetStudyId'),
      })),
      'study_relationships.csv',
    ).values(),
  ];

  const collections = byId(
    await all('study_collections.csv', (r) => {
      const members = r.ids('Studies');
      const missing = members.find((s) => !studies.has(s));
      if (missing !== undefined) r.fail(`no study with ID ${missing} in studies.csv`);
      return {
        id: r.requiredId('ID'),
        line: r.line,
        name: r.required('Name'),
        description: r.text('Description'),
        shared: r.bool('Shared'),
        createdBy: requiredUser(r, 'CreatedBy'),
        createdAt: r.requiredDate('CreatedAt'),
        updatedAt: r.date('UpdatedAt'),
        studies: members,
      };
    }),
    'study_collections.csv',
  );

  const links: StLink[] = [];
  // String.valueOf(null) writes "null": a link without its label or URL.
  for (const r of await all('study_external_links.csv')) {
    const study = studyOf(r);
    const label = r.text('Label');
    const url = r.text('Url');
    if (url === null || url === 'null') {
      warnings.push({ file: r.file, line: r.line, message: 'a link without a URL: left out' });
      continue;
    }
    links.push({ key: String(r.requiredId('ID')), line: r.line, file: r.file, kind: 'study', parent: study, label: label === null || label === 'null' ? url : label, url });
  }
  links.push(...(await folderLinks(source, all, has, warnings, { programs, studies, assays })));

  return { version, users, programs, assayTypes, typeTasks, studies, assays, collaborators, keywords, collections, relationships, notes, links };
}

/** A row of the custom field files (assay_type_fields, assay_type_task_fields, assay_task_fields). */
export function readField(r: Row, parentColumn: string): StField {
  const type = r.oneOf('Type', ST_FIELD_TYPES);
  const options = r.text('DropdownOptions');
  return {
    id: r.requiredId('ID'),
    line: r.line,
    file: r.file,
    parent: r.requiredId(parentColumn),
    name: r.required('FieldName'),
    displayName: r.text('DisplayName') ?? r.required('FieldName'),
    type: FIELD_TYPES[type],
    required: r.bool('Required'),
    description: r.text('Description'),
    active: r.bool('Active'),
    order: r.int('FieldOrder') ?? 0,
    // The web client writes a dropdown's options one per line.
    options: type === 'DROPDOWN' ? [...new Set((options ?? '').split(/\r?\n/).map((o) => o.trim()).filter(Boolean))] : null,
    defaultValue: r.text('DefaultValue'),
  };
}

type Records = { programs: Map<number, unknown>; studies: Map<number, unknown>; assays: Map<number, unknown> };

/**
 * Storage, notebook and Git folders of programs, studies and assays → external links on their
 * records, when the export gives a web address for them (a folder's `webUrl`, an ELN folder's
 * URL, a repository's or group's web URL); nothing is asked of those systems.
 */
async function folderLinks(
  source: ExportSource,
  all: <T = Row>(file: string, map?: (row: Row) => T) => Promise<T[]>,
  has: (file: string) => boolean,
  warnings: Warning[],
  records: Records,
): Promise<StLink[]> {
  const out: StLink[] = [];
  const web = (url: unknown) => (typeof url === 'string' && /^https?:\/\/\S+$/i.test(url) ? url : null);
  const drives = new Map(await all('storage_drives.csv', (r) => [r.requiredId('ID'), r.required('DisplayName')] as const));
  const folders = new Map<number, { name: string; url: string | null }>();
  for (const r of await all('storage_drive_folders.csv')) {
    const drive = r.requiredId('StorageDriveId');
    if (!drives.has(drive)) r.fail(`no storage drive with ID ${drive} in storage_drives.csv`);
    const details = r.object('Details');
    folders.set(r.requiredId('ID'), { name: r.text('Name') ?? r.required('Path'), url: web(details.webUrl) });
  }
  // The first version has no eln_folders.csv: its notebook folders name folders it does not export.
  const eln = has('eln_folders.csv') ? new Map(await all('eln_folders.csv', (r) => [r.requiredId('ID'), { name: r.text('Name') ?? 'Notebook', url: web(r.text('Url')) }] as const)) : undefined;
  const groups = new Map(await all('git_groups.csv', (r) => [r.requiredId('ID'), { name: r.required('DisplayName'), url: web(r.text('WebUrl')) }] as const));
  const repositories = new Map(await all('git_repositories.csv', (r) => [r.requiredId('ID'), { name: r.required('DisplayName'), url: web(r.text('WebURL')) }] as const));
  await all('gitlab_groups.csv');
  for (const file of Object.keys(FILE_SPECS).filter((f) => f.endsWith('_integrations.csv') || f === 'sharepoint_sites.csv')) if (has(file)) await all(file);

  const kinds = [['program', 'programs', 'ProgramId'], ['study', 'study', 'StudyId'], ['assay', 'assay', 'AssayId']] as const;
  let unlinked = 0;
  let noEln = 0;
  for (const [kind, prefix, parentColumn] of kinds) {
    const parents = records[`${kind === 'study' ? 'studies' : `${kind}s`}` as keyof Records];
    const parentOf = (r: Row) => {
      const id = r.requiredId(parentColumn);
      if (!parents.has(id)) r.fail(`no ${kind} with ID ${id} in ${kind === 'study' ? 'studies' : `${kind}s`}.csv`);
      return id;
    };
    for (const r of await all(`${prefix}_storage_folders.csv`)) {
      const folderId = r.requiredId('StorageDriveFolderId');
      const folder = folders.get(folderId) ?? r.fail(`no storage drive folder with ID ${folderId} in storage_drive_folders.csv`);
      const parent = parentOf(r);
      if (!folder.url) unlinked++;
      else out.push({ key: `storage:${kind}:${r.requiredId('ID')}`, line: r.line, file: r.file, kind, parent, label: `Storage folder: ${folder.name}`, url: folder.url });
    }
    for (const r of await all(`${prefix}_notebook_folders.csv`)) {
      const folderId = r.requiredId('ElnFolderId');
      const parent = parentOf(r);
      if (!eln) {
        noEln++;
        continue;
      }
      const folder = eln.get(folderId) ?? r.fail(`no ELN folder with ID ${folderId} in eln_folders.csv`);
      if (!folder.url) unlinked++;
      else out.push({ key: `notebook:${kind}:${r.requiredId('ID')}`, line: r.line, file: r.file, kind, parent, label: `Notebook folder: ${folder.name}`, url: folder.url });
    }
  }
  for (const r of await all('programs_git_groups.csv')) {
    const id = r.requiredId('GitGroupId');
    const group = groups.get(id) ?? r.fail(`no Git group with ID ${id} in git_groups.csv`);
    const parent = r.requiredId('ProgramId');
    if (!records.programs.has(parent)) r.fail(`no program with ID ${parent} in programs.csv`);
    if (!group.url) unlinked++;
    else out.push({ key: `git-group:${parent}:${id}`, line: r.line, file: r.file, kind: 'program', parent, label: `Git group: ${group.name}`, url: group.url });
  }
  for (const [kind, file, column] of [['study', 'study_git_repositories.csv', 'StudyId'], ['assay', 'assay_git_repositories.csv', 'AssayId']] as const) {
    for (const r of await all(file)) {
      const id = r.requiredId('GitRepositoryId');
      const repo = repositories.get(id) ?? r.fail(`no Git repository with ID ${id} in git_repositories.csv`);
      const parent = r.requiredId(column);
      if (!records[kind === 'study' ? 'studies' : 'assays'].has(parent)) r.fail(`no ${kind} with ID ${parent} in ${kind === 'study' ? 'studies' : 'assays'}.csv`);
      if (!repo.url) unlinked++;
      else out.push({ key: `git:${kind}:${parent}:${id}`, line: r.line, file: r.file, kind, parent, label: `Git repository: ${repo.name}`, url: repo.url });
    }
  }
  if (unlinked) warnings.push({ file: 'storage_drive_folders.csv', line: 0, message: `${unlinked} storage, notebook or Git folder(s) have no web address (a local drive, an S3 path): left out` });
  if (noEln) warnings.push({ file: 'eln_folders.csv', line: 0, message: `${noEln} notebook folder(s) name ELN folders this export does not describe (no eln_folders.csv): left out` });
  return out;
}
