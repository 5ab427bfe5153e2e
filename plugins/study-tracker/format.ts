/**
 * The files of a Study Tracker data export (DataExportService: one CSV per table) and their
 * columns, as its two versions in the wild write them (docs/import-study-tracker.md). `needed`
 * columns must be there (else the file cannot be imported); `known` ones are read or knowingly
 * left out; any other column is reported as a warning.
 */
export interface FileSpec {
  needed: readonly string[];
  known?: readonly string[];
}

const FIELD_COLUMNS = ['DisplayName', 'FieldName', 'Type', 'Required', 'Description', 'Active', 'FieldOrder', 'DropdownOptions', 'DefaultValue'];
const FOLDER = (parent: string, folder: string) => ({ needed: ['ID', parent, folder, 'IsPrimary'] });

/** Written by both versions: a missing one is an error. */
export const REQUIRED_FILES = {
  'users.csv': {
    needed: ['ID', 'Username', 'DisplayName', 'Email', 'Active'],
    known: ['Type', 'Department', 'Title', 'Admin', 'Locked', 'Expired', 'CredentialExpired', 'CreatedAt', 'UpdatedAt', 'Attributes', 'Configuration'],
  },
  'programs.csv': {
    needed: ['ID', 'Name', 'Code', 'Description', 'CreatedBy', 'CreatedAt', 'UpdatedAt', 'Active'],
    known: ['LastModifiedBy', 'Attributes'],
  },
  'programs_notebook_folders.csv': FOLDER('ProgramId', 'ElnFolderId'),
  'programs_storage_folders.csv': FOLDER('ProgramId', 'StorageDriveFolderId'),
  'programs_git_groups.csv': { needed: ['GitGroupId', 'ProgramId'] },
  'storage_drives.csv': {
    needed: ['ID', 'DisplayName', 'DriveType', 'RootPath', 'Details'],
    known: ['Active', 'CreatedAt', 'UpdatedAt'],
  },
  'storage_drive_folders.csv': {
    needed: ['ID', 'StorageDriveId', 'Name', 'Path', 'Details'],
    known: ['BrowserRoot', 'StudyRoot', 'WriteEnabled', 'DeleteEnabled', 'CreatedAt', 'UpdatedAt'],
  },
  'git_groups.csv': { needed: ['ID', 'DisplayName', 'WebUrl'], known: ['ParentGroupId', 'Active', 'GitServiceType', 'CreatedAt', 'UpdatedAt'] },
  'gitlab_groups.csv': { needed: ['ID'], known: ['GitLabIntegrationId', 'GitGroupId', 'GroupId', 'Name', 'Path'] },
  'git_repositories.csv': { needed: ['ID', 'DisplayName', 'WebURL'], known: ['GitGroupId', 'Description', 'SshURL', 'HttpURL', 'CreatedAt', 'UpdatedAt'] },
  // The 1.0.2 hotfix adds GitRepositoryId: how the two versions are told apart.
  'gitlab_repositories.csv': { needed: ['ID'], known: ['GitLabGroupId', 'GitRepositoryId', 'RepositoryId', 'Name', 'Path'] },
  'assay_types.csv': { needed: ['ID', 'Name', 'Description', 'Active'], known: ['Attributes'] },
  'assay_type_fields.csv': { needed: ['ID', 'AssayTypeId', ...FIELD_COLUMNS] },
  'assay_type_tasks.csv': { needed: ['ID', 'AssayTypeId', 'Status', 'Label', 'Order'], known: ['CreatedAt', 'UpdatedAt'] },
  'assay_type_task_fields.csv': { needed: ['ID', 'AssayTypeTaskId', ...FIELD_COLUMNS] },
  'studies.csv': {
    needed: ['ID', 'ProgramId', 'Code', 'Status', 'Name', 'Description', 'CollaboratorId', 'Active', 'CreatedBy', 'StartDate', 'CreatedAt', 'UpdatedAt', 'Owner', 'Users', 'Keywords'],
    known: ['ExternalCode', 'Legacy', 'LastModifiedBy', 'EndDate', 'Attributes'],
  },
  'study_notebook_folders.csv': FOLDER('StudyId', 'ElnFolderId'),
  'study_storage_folders.csv': FOLDER('StudyId', 'StorageDriveFolderId'),
  'study_external_links.csv': { needed: ['ID', 'StudyId', 'Label', 'Url'] },
  'study_relationships.csv': { needed: ['ID', 'Type', 'SourceStudyId', 'TargetStudyId'] },
  'study_conclusions.csv': { needed: ['ID', 'StudyId', 'Content', 'CreatedBy', 'CreatedAt', 'UpdatedAt'], known: ['LastModifiedBy'] },
  'study_comments.csv': { needed: ['ID', 'StudyId', 'Text', 'CreatedBy', 'CreatedAt', 'UpdatedAt'] },
  'study_git_repositories.csv': { needed: ['GitRepositoryId', 'StudyId'] },
  'assays.csv': {
    needed: ['ID', 'AssayTypeId', 'StudyId', 'Code', 'Name', 'Description', 'Status', 'CreatedBy', 'Owner', 'CreatedAt', 'UpdatedAt', 'StartDate', 'Active', 'Users', 'Fields'],
    known: ['LastModifiedBy', 'EndDate', 'Attributes'],
  },
  'assay_notebook_folders.csv': FOLDER('AssayId', 'ElnFolderId'),
  'assay_storage_folders.csv': FOLDER('AssayId', 'StorageDriveFolderId'),
  'assay_git_repositories.csv': { needed: ['GitRepositoryId', 'AssayId'] },
  'assay_tasks.csv': { needed: ['ID', 'AssayId', 'Status', 'Label', 'Order', 'CreatedAt', 'UpdatedAt', 'CreatedBy', 'LastModifiedBy', 'AssignedTo', 'DueDate', 'Data'] },
  'assay_task_fields.csv': { needed: ['ID', 'AssayTaskId', ...FIELD_COLUMNS] },
  'collaborators.csv': { needed: ['ID', 'Label', 'Code', 'OrganizationName', 'OrganizationLocation', 'ContactPersonName', 'ContactEmail', 'Active'] },
  'keywords.csv': { needed: ['ID', 'Keyword', 'Category'] },
  'study_collections.csv': { needed: ['ID', 'Name', 'Description', 'Shared', 'CreatedBy', 'CreatedAt', 'UpdatedAt', 'Studies'], known: ['LastModifiedBy'] },
  'activity.csv': { needed: ['ID', 'ProgramId', 'StudyId', 'AssayId', 'EventType', 'Data', 'User', 'Date'] },
} satisfies Record<string, FileSpec>;

const INTEGRATION = (...columns: string[]): FileSpec => ({ needed: [], known: ['ID', ...columns, 'Active', 'CreatedAt', 'UpdatedAt'] });

/** Written by later exports only: read when present. Integrations hold connection settings of other systems: left out. */
export const OPTIONAL_FILES = {
  'eln_folders.csv': { needed: ['ID', 'Name', 'Url'], known: ['Path', 'ReferenceId'] },
  'aws_integrations.csv': INTEGRATION('Name', 'AccountNumber', 'Region', 'UseIam'),
  'egnyte_integrations.csv': INTEGRATION('TenantName', 'RootUrl', 'QPS'),
  'benchling_integrations.csv': INTEGRATION('Name', 'TenantName', 'RootUrl'),
  'gitlab_integrations.csv': INTEGRATION('Name', 'RootUrl', 'Username'),
  'microsoft_integrations.csv': INTEGRATION('Name', 'Domain', 'TenantId'),
  'sharepoint_sites.csv': INTEGRATION('Name', 'Url', 'SiteId'),
} satisfies Record<string, FileSpec>;

export type ExportFile = keyof typeof REQUIRED_FILES | keyof typeof OPTIONAL_FILES;

export const FILE_SPECS: Record<string, FileSpec> = { ...REQUIRED_FILES, ...OPTIONAL_FILES };
