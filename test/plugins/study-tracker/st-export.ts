// Writes Study Tracker data exports exactly as its DataExportService writes them (both versions
// of the format: docs/import-study-tracker.md), from a model of the records: every file and
// header, OpenCSV CSVWriter's defaults (every non-null field quoted, `"` doubled, null as an empty
// unquoted field, `\n` line ends), dates as SimpleDateFormat("yyyy-MM-dd'T'HH:mm:ssXXX"), ids as
// numbers, id lists comma-separated in one field, JSON as Jackson writes it, String.valueOf(null)
// as "null", the first version's assay CreatedBy as a user object's toString() and LastModifiedBy
// as a display name. Used by the tests (small exports) and bench/import.ts (the large one).
import { createWriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { once } from 'node:events';
import yazl from 'yazl';

export type Version = 'first' | '1.0.2';

export interface User { id: number; username: string; displayName: string; email: string | null; active: boolean; admin?: boolean; createdAt: Date }
export interface Program { id: number; name: string; code: string; description: string | null; createdBy: number; lastModifiedBy?: number | null; createdAt: Date; updatedAt?: Date | null; active: boolean; attributes?: Record<string, string> }
export interface Field { id: number; parent: number; displayName: string; fieldName: string; type: string; required: boolean; description?: string | null; active: boolean; order: number | null; dropdownOptions?: string | null; defaultValue?: string | null }
export interface AssayType { id: number; name: string; description: string | null; active: boolean; attributes?: Record<string, string> }
export interface TypeTask { id: number; assayType: number; status: string; label: string; order: number; createdAt: Date }
export interface Study {
  id: number; program: number; code: string; externalCode?: string | null; status: string; name: string; description: string | null; collaborator?: number | null;
  legacy?: boolean; active: boolean; createdBy: number | null; lastModifiedBy?: number | null; startDate: Date; endDate?: Date | null; createdAt: Date; updatedAt?: Date | null;
  owner: number; users: number[]; keywords: number[]; attributes?: Record<string, string>;
}
export interface Assay {
  id: number; assayType: number; study: number; code: string; name: string; description: string | null; status: string; createdBy: number; lastModifiedBy?: number | null;
  owner: number; createdAt: Date; updatedAt?: Date | null; startDate?: Date | null; endDate?: Date | null; active: boolean; users: number[]; fields: Record<string, unknown>; attributes?: Record<string, string>;
}
export interface Task { id: number; assay: number; status: string; label: string; order: number; createdAt: Date; updatedAt?: Date | null; createdBy?: number | null; lastModifiedBy?: number | null; assignedTo?: number | null; dueDate?: Date | null; data: Record<string, unknown> | null }
export interface Note { id: number; study: number; text: string; createdBy: number; createdAt: Date; updatedAt?: Date | null }
export interface Link { id: number; study: number; label: string | null; url: string | null }
export interface Relationship { id: number; type: string; source: number; target: number }
export interface Collaborator { id: number; label: string; code: string | null; organizationName: string | null; organizationLocation?: string | null; contactPersonName?: string | null; contactEmail?: string | null; active: boolean }
export interface Keyword { id: number; keyword: string; category: string | null }
export interface Collection { id: number; name: string; description: string | null; shared: boolean; createdBy: number; createdAt: Date; updatedAt?: Date | null; studies: number[] }
export interface Activity { id: number; program?: number | null; study?: number | null; assay?: number | null; eventType: string; data: Record<string, unknown>; user: number | null; date: Date }
export interface Drive { id: number; displayName: string; driveType: string; rootPath: string; details: Record<string, unknown>; createdAt: Date }
export interface DriveFolder { id: number; drive: number; name: string; path: string; details: Record<string, unknown>; createdAt: Date }
export interface FolderLink { id: number; parent: number; folder: number; primary: boolean }
export interface ElnFolder { id: number; name: string; url: string; path: string | null; referenceId: string | null }
export interface GitGroup { id: number; displayName: string; webUrl: string; createdAt: Date }
export interface GitRepository { id: number; group: number | null; displayName: string; description: string | null; webUrl: string; createdAt: Date }

/** The records of an export; the big lists may be generators (the bench's million activity rows). */
export interface Model {
  users: User[];
  programs: Program[];
  drives: Drive[];
  driveFolders: DriveFolder[];
  programStorageFolders: FolderLink[];
  studyStorageFolders: FolderLink[];
  assayStorageFolders: FolderLink[];
  elnFolders: ElnFolder[];
  programNotebookFolders: FolderLink[];
  studyNotebookFolders: FolderLink[];
  assayNotebookFolders: FolderLink[];
  gitGroups: GitGroup[];
  programGitGroups: { group: number; program: number }[];
  gitRepositories: GitRepository[];
  studyGitRepositories: { repository: number; study: number }[];
  assayGitRepositories: { repository: number; assay: number }[];
  assayTypes: AssayType[];
  assayTypeFields: Field[];
  assayTypeTasks: TypeTask[];
  assayTypeTaskFields: Field[];
  studies: Iterable<Study>;
  links: Link[];
  relationships: Relationship[];
  conclusions: Note[];
  comments: Note[];
  assays: Iterable<Assay>;
  tasks: Iterable<Task>;
  taskFields: Iterable<Field>;
  collaborators: Collaborator[];
  keywords: Keyword[];
  collections: Collection[];
  activity: Iterable<Activity>;
}

/** SimpleDateFormat("yyyy-MM-dd'T'HH:mm:ssXXX") in a server's time zone (`offset` minutes east of UTC; XXX writes Z for 0). */
export function sdf(date: Date, offset = 120): string {
  const local = new Date(date.getTime() + offset * 60_000);
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  const zone = offset === 0 ? 'Z' : `${offset < 0 ? '-' : '+'}${p(Math.floor(Math.abs(offset) / 60))}:${p(Math.abs(offset) % 60)}`;
  return `${p(local.getUTCFullYear(), 4)}-${p(local.getUTCMonth() + 1)}-${p(local.getUTCDate())}T${p(local.getUTCHours())}:${p(local.getUTCMinutes())}:${p(local.getUTCSeconds())}${zone}`;
}

/** A cell: null is written as nothing, anything else quoted with `"` doubled (OpenCSV's CSVWriter). */
type Cell = string | null;
export function csvLine(cells: Cell[]): string {
  return cells.map((c) => (c === null ? '' : `"${c.replace(/"/g, '""')}"`)).join(',') + '\n';
}

/** Java's String.valueOf and the export's `x != null ? ... : ""` idioms. */
const valueOf = (v: unknown): string => (v === null || v === undefined ? 'null' : String(v));
const orEmpty = (v: number | null | undefined): string => (v === null || v === undefined ? '' : String(v));
const date = (d: Date | null | undefined): string => (d ? sdf(d) : '');
const ids = (list: number[]): string => list.join(',');
const json = (v: unknown): string => JSON.stringify(v ?? null);

/** Java's Object.toString() of a user (User has no toString of its own): class name @ hash. */
const USER_TO_STRING = 'io.studytracker.model.User@6d9f624';

const FIELD_HEADER = ['DisplayName', 'FieldName', 'Type', 'Required', 'Description', 'Active', 'FieldOrder', 'DropdownOptions', 'DefaultValue'];
const fieldCells = (f: Field, parent: number): Cell[] => [
  String(f.id), String(parent), f.displayName, f.fieldName, f.type, String(f.required), f.description ?? null, String(f.active), valueOf(f.order), f.dropdownOptions ?? null, f.defaultValue ?? null,
];

interface FileDef {
  header: string[];
  rows: () => Iterable<Cell[]>;
}

/** Every file an export of `version` holds, in DataExportService's column order. */
export function files(model: Model, version: Version): Record<string, FileDef> {
  const m = model;
  const usersById = new Map(m.users.map((u) => [u.id, u]));
  const out: Record<string, FileDef> = {
    'users.csv': {
      header: ['ID', 'Username', 'DisplayName', 'Email', 'Type', 'Department', 'Title', 'Active', 'Admin', 'Locked', 'Expired', 'CredentialExpired', 'CreatedAt', 'UpdatedAt', 'Attributes', 'Configuration'],
      rows: () => m.users.map((u) => [String(u.id), u.username, u.displayName, u.email, 'STANDARD_USER', null, null, String(u.active), String(u.admin ?? false), 'false', 'false', 'false', sdf(u.createdAt), '', '{}', '{}']),
    },
    'programs.csv': {
      header: ['ID', 'Name', 'Code', 'Description', 'CreatedBy', 'LastModifiedBy', 'CreatedAt', 'UpdatedAt', 'Active', 'Attributes'],
      rows: () => m.programs.map((p) => [String(p.id), p.name, p.code, p.description, String(p.createdBy), orEmpty(p.lastModifiedBy), sdf(p.createdAt), date(p.updatedAt), String(p.active), json(p.attributes ?? {})]),
    },
    'programs_notebook_folders.csv': folderFile('ProgramId', 'ElnFolderId', m.programNotebookFolders),
    'programs_storage_folders.csv': folderFile('ProgramId', 'StorageDriveFolderId', m.programStorageFolders),
    'programs_git_groups.csv': { header: ['GitGroupId', 'ProgramId'], rows: () => m.programGitGroups.map((g) => [String(g.group), String(g.program)]) },
    'storage_drives.csv': {
      header: ['ID', 'DisplayName', 'DriveType', 'RootPath', 'Active', 'CreatedAt', 'UpdatedAt', 'Details'],
      rows: () => m.drives.map((d) => [String(d.id), d.displayName, d.driveType, d.rootPath, 'true', sdf(d.createdAt), '', json(d.details)]),
    },
    'storage_drive_folders.csv': {
      header: ['ID', 'StorageDriveId', 'Name', 'Path', 'BrowserRoot', 'StudyRoot', 'WriteEnabled', 'DeleteEnabled', 'CreatedAt', 'UpdatedAt', 'Details'],
      rows: () => m.driveFolders.map((f) => [String(f.id), String(f.drive), f.name, f.path, 'false', 'true', 'true', 'false', sdf(f.createdAt), '', json(f.details)]),
    },
    'git_groups.csv': {
      header: ['ID', 'ParentGroupId', 'DisplayName', 'WebUrl', 'Active', 'GitServiceType', 'CreatedAt', 'UpdatedAt'],
      rows: () => m.gitGroups.map((g) => [String(g.id), '', g.displayName, g.webUrl, 'true', 'GITLAB', sdf(g.createdAt), '']),
    },
    'gitlab_groups.csv': {
      header: ['ID', 'GitLabIntegrationId', 'GitGroupId', 'GroupId', 'Name', 'Path'],
      rows: () => m.gitGroups.map((g) => [String(g.id), '1', String(g.id), String(100 + g.id), g.displayName, g.displayName.toLowerCase()]),
    },
    'git_repositories.csv': {
      header: ['ID', 'GitGroupId', 'DisplayName', 'Description', 'WebURL', 'SshURL', 'HttpURL', 'CreatedAt', 'UpdatedAt'],
      rows: () => m.gitRepositories.map((r) => [String(r.id), orEmpty(r.group), r.displayName, r.description, r.webUrl, `git@git.example:${r.displayName}.git`, `${r.webUrl}.git`, sdf(r.createdAt), '']),
    },
    // The 1.0.2 hotfix adds GitRepositoryId: the header tells the versions apart.
    'gitlab_repositories.csv':
      version === 'first'
        ? { header: ['ID', 'GitLabGroupId', 'RepositoryId', 'Name', 'Path'], rows: () => m.gitRepositories.map((r) => [String(r.id), String(r.group ?? 1), String(500 + r.id), r.displayName, r.displayName]) }
        : { header: ['ID', 'GitLabGroupId', 'GitRepositoryId', 'RepositoryId', 'Name', 'Path'], rows: () => m.gitRepositories.map((r) => [String(r.id), String(r.group ?? 1), String(r.id), String(500 + r.id), r.displayName, r.displayName]) },
    'assay_types.csv': {
      header: ['ID', 'Name', 'Description', 'Active', 'Attributes'],
      rows: () => m.assayTypes.map((t) => [String(t.id), t.name, t.description, String(t.active), json(t.attributes ?? {})]),
    },
    'assay_type_fields.csv': { header: ['ID', 'AssayTypeId', ...FIELD_HEADER], rows: () => m.assayTypeFields.map((f) => fieldCells(f, f.parent)) },
    'assay_type_tasks.csv': {
      header: ['ID', 'AssayTypeId', 'Status', 'Label', 'Order', 'CreatedAt', 'UpdatedAt'],
      rows: () => m.assayTypeTasks.map((t) => [String(t.id), String(t.assayType), t.status, t.label, String(t.order), sdf(t.createdAt), '']),
    },
    'assay_type_task_fields.csv': { header: ['ID', 'AssayTypeTaskId', ...FIELD_HEADER], rows: () => m.assayTypeTaskFields.map((f) => fieldCells(f, f.parent)) },
    'studies.csv': {
      header: ['ID', 'ProgramId', 'Code', 'ExternalCode', 'Status', 'Name', 'Description', 'CollaboratorId', 'Legacy', 'Active', 'CreatedBy', 'LastModifiedBy', 'StartDate', 'EndDate', 'CreatedAt', 'UpdatedAt', 'Owner', 'Users', 'Keywords', 'Attributes'],
      rows: () =>
        map(m.studies, (s) => [
          String(s.id), String(s.program), s.code, s.externalCode ?? null, s.status, s.name, s.description, orEmpty(s.collaborator), String(s.legacy ?? false), String(s.active),
          orEmpty(s.createdBy), orEmpty(s.lastModifiedBy), sdf(s.startDate), date(s.endDate), sdf(s.createdAt), date(s.updatedAt), String(s.owner), ids(s.users), ids(s.keywords), json(s.attributes ?? {}),
        ]),
    },
    'study_notebook_folders.csv': folderFile('StudyId', 'ElnFolderId', m.studyNotebookFolders),
    'study_storage_folders.csv': folderFile('StudyId', 'StorageDriveFolderId', m.studyStorageFolders),
    'study_external_links.csv': { header: ['ID', 'StudyId', 'Label', 'Url'], rows: () => m.links.map((l) => [String(l.id), String(l.study), valueOf(l.label), valueOf(l.url)]) },
    'study_relationships.csv': { header: ['ID', 'Type', 'SourceStudyId', 'TargetStudyId'], rows: () => m.relationships.map((r) => [String(r.id), r.type, String(r.source), String(r.target)]) },
    'study_conclusions.csv': {
      header: ['ID', 'StudyId', 'Content', 'CreatedBy', 'LastModifiedBy', 'CreatedAt', 'UpdatedAt'],
      rows: () => m.conclusions.map((c) => [String(c.id), String(c.study), c.text, String(c.createdBy), '', sdf(c.createdAt), date(c.updatedAt)]),
    },
    'study_comments.csv': {
      header: ['ID', 'StudyId', 'Text', 'CreatedBy', 'CreatedAt', 'UpdatedAt'],
      rows: () => m.comments.map((c) => [String(c.id), String(c.study), c.text, String(c.createdBy), sdf(c.createdAt), date(c.updatedAt)]),
    },
    'study_git_repositories.csv': { header: ['GitRepositoryId', 'StudyId'], rows: () => m.studyGitRepositories.map((g) => [String(g.repository), String(g.study)]) },
    'assays.csv': {
      header: ['ID', 'AssayTypeId', 'StudyId', 'Code', 'Name', 'Description', 'Status', 'CreatedBy', 'LastModifiedBy', 'Owner', 'CreatedAt', 'UpdatedAt', 'StartDate', 'EndDate', 'Active', 'Users', 'Fields', 'Attributes'],
      rows: () =>
        map(m.assays, (a) => {
          const modifier = a.lastModifiedBy === null || a.lastModifiedBy === undefined ? null : usersById.get(a.lastModifiedBy)!;
          // The first version: toString() of the creator, the modifier's display name; the hotfix: ids.
          const createdBy = version === 'first' ? USER_TO_STRING : String(a.createdBy);
          const lastModifiedBy = modifier === null ? '' : version === 'first' ? modifier.displayName : String(modifier.id);
          return [
            String(a.id), String(a.assayType), String(a.study), a.code, a.name, a.description, a.status, createdBy, lastModifiedBy, String(a.owner), sdf(a.createdAt), date(a.updatedAt),
            date(a.startDate), date(a.endDate), String(a.active), ids(a.users), json(a.fields), json(a.attributes ?? {}),
          ];
        }),
    },
    'assay_notebook_folders.csv': folderFile('AssayId', 'ElnFolderId', m.assayNotebookFolders),
    'assay_storage_folders.csv': folderFile('AssayId', 'StorageDriveFolderId', m.assayStorageFolders),
    'assay_git_repositories.csv': { header: ['GitRepositoryId', 'AssayId'], rows: () => m.assayGitRepositories.map((g) => [String(g.repository), String(g.assay)]) },
    'assay_tasks.csv': {
      header: ['ID', 'AssayId', 'Status', 'Label', 'Order', 'CreatedAt', 'UpdatedAt', 'CreatedBy', 'LastModifiedBy', 'AssignedTo', 'DueDate', 'Data'],
      rows: () =>
        map(m.tasks, (t) => [
          String(t.id), String(t.assay), t.status, t.label, String(t.order), sdf(t.createdAt), date(t.updatedAt), orEmpty(t.createdBy), orEmpty(t.lastModifiedBy), orEmpty(t.assignedTo), date(t.dueDate),
          // A task without data: null in the first version, {} in the 1.0.2 hotfix.
          t.data === null ? (version === 'first' ? 'null' : '{}') : json(t.data),
        ]),
    },
    'assay_task_fields.csv': { header: ['ID', 'AssayTaskId', ...FIELD_HEADER], rows: () => map(m.taskFields, (f) => fieldCells(f, f.parent)) },
    'collaborators.csv': {
      header: ['ID', 'Label', 'Code', 'OrganizationName', 'OrganizationLocation', 'ContactPersonName', 'ContactEmail', 'Active'],
      rows: () => m.collaborators.map((c) => [String(c.id), c.label, c.code, c.organizationName, c.organizationLocation ?? '', c.contactPersonName ?? '', c.contactEmail ?? '', String(c.active)]),
    },
    'keywords.csv': { header: ['ID', 'Keyword', 'Category'], rows: () => m.keywords.map((k) => [String(k.id), k.keyword, k.category]) },
    'study_collections.csv': {
      header: ['ID', 'Name', 'Description', 'Shared', 'CreatedBy', 'LastModifiedBy', 'CreatedAt', 'UpdatedAt', 'Studies'],
      rows: () => m.collections.map((c) => [String(c.id), c.name, c.description, String(c.shared), String(c.createdBy), '', sdf(c.createdAt), date(c.updatedAt), ids(c.studies)]),
    },
    'activity.csv': {
      header: ['ID', 'ProgramId', 'StudyId', 'AssayId', 'EventType', 'Data', 'User', 'Date'],
      rows: () => map(m.activity, (a) => [String(a.id), orEmpty(a.program), orEmpty(a.study), orEmpty(a.assay), a.eventType, json(a.data), orEmpty(a.user), sdf(a.date)]),
    },
  };
  if (version === '1.0.2') {
    // Later exports add the ELN folders and the integrations (their settings are not imported).
    const integration = (...header: string[]): FileDef => ({ header, rows: () => [] });
    out['eln_folders.csv'] = { header: ['ID', 'Name', 'Url', 'Path', 'ReferenceId'], rows: () => m.elnFolders.map((f) => [String(f.id), f.name, f.url, f.path, f.referenceId]) };
    out['aws_integrations.csv'] = integration('ID', 'Name', 'AccountNumber', 'Region', 'UseIam', 'Active', 'CreatedAt', 'UpdatedAt');
    out['egnyte_integrations.csv'] = { header: ['ID', 'TenantName', 'RootUrl', 'QPS', 'Active', 'CreatedAt', 'UpdatedAt'], rows: () => [['1', 'lab', 'https://lab.egnyte.com', '1', 'true', sdf(new Date(Date.UTC(2023, 0, 1))), '']] };
    out['benchling_integrations.csv'] = integration('ID', 'Name', 'TenantName', 'RootUrl', 'Active', 'CreatedAt', 'UpdatedAt');
    out['gitlab_integrations.csv'] = integration('ID', 'Name', 'RootUrl', 'Username', 'Active', 'CreatedAt', 'UpdatedAt');
    out['microsoft_integrations.csv'] = integration('ID', 'Name', 'Domain', 'TenantId', 'Active', 'CreatedAt', 'UpdatedAt');
    out['sharepoint_sites.csv'] = integration('ID', 'Name', 'Url', 'SiteId', 'Active', 'CreatedAt', 'UpdatedAt');
  }
  return out;
}

function folderFile(parent: string, folder: string, rows: FolderLink[]): FileDef {
  return { header: ['ID', parent, folder, 'IsPrimary'], rows: () => rows.map((f) => [String(f.id), String(f.parent), String(f.folder), String(f.primary)]) };
}

function* map<T>(items: Iterable<T>, fn: (item: T) => Cell[]): Iterable<Cell[]> {
  for (const item of items) yield fn(item);
}

/** Changes to what is written, for the error cases: a file left out, a header changed, raw text. */
export interface Tamper {
  omit?: string[];
  /** Replace a file's text (after it is written as usual) with what this returns. */
  edit?: Record<string, (text: string) => string>;
}

/** Writes the export's files into `dir` (created), streaming: the big lists never sit in memory as text. */
export async function writeExport(dir: string, model: Model, version: Version, tamper: Tamper = {}): Promise<void> {
  await mkdir(dir, { recursive: true });
  for (const [name, def] of Object.entries(files(model, version))) {
    if (tamper.omit?.includes(name)) continue;
    const edit = tamper.edit?.[name];
    if (edit) {
      let text = csvLine(def.header);
      for (const row of def.rows()) text += csvLine(row);
      const out = createWriteStream(join(dir, name));
      out.end(edit(text));
      await once(out, 'close');
      continue;
    }
    const out = createWriteStream(join(dir, name));
    let chunk = csvLine(def.header);
    for (const row of def.rows()) {
      chunk += csvLine(row);
      if (chunk.length > 1 << 20) {
        if (!out.write(chunk)) await once(out, 'drain');
        chunk = '';
      }
    }
    out.end(chunk);
    await once(out, 'close');
  }
}

/** Zips a written export as Study Tracker's CompressionUtil does: the folder's name, then its files. */
export async function zipExport(dir: string, folderName: string, zipPath: string): Promise<void> {
  const { readdir } = await import('node:fs/promises');
  const zip = new yazl.ZipFile();
  zip.addEmptyDirectory(folderName);
  for (const name of await readdir(dir)) zip.addFile(join(dir, name), `${folderName}/${name}`);
  zip.end();
  const out = createWriteStream(zipPath);
  zip.outputStream.pipe(out);
  await once(out, 'close');
}
