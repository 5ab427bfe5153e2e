// A deterministic Study Tracker export of any size (the tests' small ones, the bench's large one):
// every kind of record, every status and field type, and the text a lab really types (commas,
// quotes, line breaks, non-ASCII names). Big lists are generators: the bench's million activity
// rows are written as they are made.
import type { Activity, Assay, Field, Model, Study, Task } from './st-export.ts';

export interface Sizes {
  programs: number;
  studiesPerProgram: number;
  assaysPerStudy: number;
  tasksPerAssay: number;
  /** Activity rows per assay (besides one per program and study). */
  activityPerAssay: number;
}

export const SMALL: Sizes = { programs: 2, studiesPerProgram: 3, assaysPerStudy: 2, tasksPerAssay: 2, activityPerAssay: 2 };

const BASE = Date.UTC(2021, 0, 4, 8, 30, 0);
export const at = (hours: number) => new Date(BASE + hours * 3_600_000);
const STATUSES = ['IN_PLANNING', 'ACTIVE', 'COMPLETE', 'ON_HOLD', 'NEEDS_ATTENTION', 'DEPRIORITIZED'];
const TASK_STATUSES = ['TODO', 'COMPLETE', 'INCOMPLETE'];
const USERS = 6;

/** A re-iterable lazy list. */
function lazy<T>(make: () => Generator<T>): Iterable<T> {
  return { [Symbol.iterator]: make };
}

export const studyId = (p: number, s: number, sz: Sizes) => (p - 1) * sz.studiesPerProgram + s;
export const assayId = (study: number, a: number, sz: Sizes) => (study - 1) * sz.assaysPerStudy + a;
export const taskId = (assay: number, t: number, sz: Sizes) => (assay - 1) * sz.tasksPerAssay + t;

export const programName = (p: number) => (p === 1 ? 'Oncology, "Phase I"\nplatform' : `Program ${p}`);
export const studyName = (id: number) => (id === 1 ? 'Zoë’s study, "dose, response"\nsecond line' : `Study ${id}`);

export function generate(sz: Sizes = SMALL): Model {
  const programs = Array.from({ length: sz.programs }, (_, i) => {
    const p = i + 1;
    return {
      id: p,
      name: programName(p),
      code: `PR${p}`,
      description: p === 2 ? null : `Program ${p} of the lab, "quoted", with, commas`,
      createdBy: 1 + (p % USERS),
      lastModifiedBy: p % 2 ? 2 : null,
      createdAt: at(p),
      updatedAt: p % 3 === 0 ? null : at(p + 1),
      active: p !== 2,
      attributes: { budget: '12' },
    };
  });
  const fields: Field[] = [
    { id: 1, parent: 1, displayName: 'Plate ID', fieldName: 'plateId', type: 'STRING', required: true, description: 'Barcode', active: true, order: 1 },
    { id: 2, parent: 1, displayName: 'Notes', fieldName: 'notes', type: 'TEXT', required: false, description: null, active: true, order: 2, defaultValue: 'none yet' },
    { id: 3, parent: 1, displayName: 'Replicates', fieldName: 'replicates', type: 'INTEGER', required: false, active: true, order: 3, defaultValue: '3' },
    { id: 4, parent: 1, displayName: 'Concentration (nM)', fieldName: 'concentration', type: 'FLOAT', required: false, active: true, order: 4 },
    { id: 5, parent: 1, displayName: 'Read on', fieldName: 'readOn', type: 'DATE', required: false, active: true, order: 5 },
    { id: 6, parent: 1, displayName: 'Blank corrected', fieldName: 'blankCorrected', type: 'BOOLEAN', required: false, active: true, order: 6, defaultValue: 'false' },
    { id: 7, parent: 1, displayName: 'Signal', fieldName: 'signal', type: 'DROPDOWN', required: false, active: true, order: 7, dropdownOptions: 'Low\nMedium\nHigh', defaultValue: 'Medium' },
    { id: 8, parent: 1, displayName: 'Raw data', fieldName: 'rawData', type: 'FILE', required: false, active: true, order: 8 },
    { id: 9, parent: 1, displayName: 'Old reader', fieldName: 'oldReader', type: 'STRING', required: false, active: false, order: null },
  ];
  const templateField = (id: number, parent: number): Field => ({ id, parent, displayName: 'Approved by QA', fieldName: 'approved', type: 'BOOLEAN', required: true, active: true, order: 1 });
  const users = Array.from({ length: USERS }, (_, i) => ({
    id: i + 1,
    username: i === 5 ? 'legacy.admin' : `user${i + 1}`,
    displayName: i === 0 ? 'Ada Lovelace, PhD' : i === 1 ? 'Bob "Bobby" Tables' : `User ${i + 1}`,
    email: i === 5 ? null : `user${i + 1}@lab.example`,
    active: i !== 4,
    admin: i === 0,
    createdAt: at(0),
  }));

  const studies = lazy(function* (): Generator<Study> {
    for (let p = 1; p <= sz.programs; p++) {
      for (let s = 1; s <= sz.studiesPerProgram; s++) {
        const id = studyId(p, s, sz);
        yield {
          id,
          program: p,
          code: `PR${p}-${10000 + id}`,
          externalCode: id === 1 ? 'EXT-1' : null,
          status: STATUSES[id % STATUSES.length],
          name: studyName(id),
          description: id % 4 === 0 ? null : `Study ${id}: "measure", then report,\nnext line`,
          collaborator: id % 3 === 0 ? 1 : null,
          legacy: false,
          active: id % 7 !== 0,
          createdBy: id % 5 === 0 ? null : 1 + (id % USERS),
          lastModifiedBy: 1,
          startDate: at(24 * id),
          endDate: id % 2 ? at(24 * id + 240) : null,
          createdAt: at(24 * id),
          updatedAt: at(24 * id + 1),
          owner: 1 + ((id + 1) % USERS),
          users: [1 + ((id + 2) % USERS), 1 + ((id + 3) % USERS)],
          keywords: id === 1 ? [1, 2] : id % 2 ? [3] : [],
          attributes: {},
        };
      }
    }
  });
  const studyCount = sz.programs * sz.studiesPerProgram;
  const assays = lazy(function* (): Generator<Assay> {
    for (let s = 1; s <= studyCount; s++) {
      for (let a = 1; a <= sz.assaysPerStudy; a++) {
        const id = assayId(s, a, sz);
        const typed = id % 2 === 1;
        yield {
          id,
          assayType: typed ? 1 : 2,
          study: s,
          code: `PR${Math.ceil(s / sz.studiesPerProgram)}-${10000 + s}-${String(a).padStart(3, '0')}`,
          name: id === 1 ? 'ELISA, "plate 1"\nrepeat' : `Assay ${id}`,
          description: id % 3 === 0 ? null : `Assay ${id} description`,
          status: STATUSES[(id + 1) % STATUSES.length],
          createdBy: 1 + (id % USERS),
          lastModifiedBy: id % 2 ? 2 : null,
          owner: 1 + ((id + 2) % USERS),
          createdAt: at(24 * s + a),
          updatedAt: at(24 * s + a + 1),
          startDate: id % 4 === 0 ? null : at(24 * s + a),
          endDate: null,
          active: id % 9 !== 0,
          users: [1 + ((id + 3) % USERS)],
          fields: typed
            ? { plateId: `PL-${id}`, notes: 'first line\nsecond, "quoted"', replicates: 3, concentration: '2.5', readOn: BASE + id * 60_000, blankCorrected: true, signal: 'High', rawData: { name: 'plate.csv', path: '/data/plate.csv', url: `https://files.lab.example/${id}/plate.csv` }, oldReader: 'Synergy' }
            : {},
          attributes: {},
        };
      }
    }
  });
  const assayCount = studyCount * sz.assaysPerStudy;
  const tasks = lazy(function* (): Generator<Task> {
    for (let a = 1; a <= assayCount; a++) {
      for (let t = 1; t <= sz.tasksPerAssay; t++) {
        const id = taskId(a, t, sz);
        yield {
          id,
          assay: a,
          status: TASK_STATUSES[id % TASK_STATUSES.length],
          label: t === 1 ? 'Coat plate, "overnight"' : `Step ${t}`,
          order: t,
          createdAt: at(24 * a),
          updatedAt: id % 2 ? at(24 * a + 5) : null,
          createdBy: id % 4 === 0 ? null : 1 + (id % USERS),
          lastModifiedBy: 1 + ((id + 1) % USERS),
          assignedTo: id % 3 === 0 ? null : 1 + ((id + 2) % USERS),
          dueDate: id % 2 ? at(24 * a + 72) : null,
          data: t === 1 && a % 2 === 1 ? { approved: true } : null,
        };
      }
    }
  });
  // A task made from the template with a form carries a copy of the form's fields.
  const taskFields = lazy(function* (): Generator<Field> {
    for (let a = 1; a <= assayCount; a += 2) yield { ...templateField(0, taskId(a, 1, sz)), id: a };
  });
  // Ids stay the same from one export to the next (as Study Tracker's do), whatever the sizes.
  const activity = lazy(function* (): Generator<Activity> {
    for (const p of programs) yield { id: p.id, program: p.id, eventType: 'NEW_PROGRAM', data: { program: { id: p.id, name: p.name, code: p.code } }, user: p.createdBy, date: p.createdAt };
    for (let s = 1; s <= studyCount; s++) {
      yield { id: 10_000_000 + s, study: s, eventType: 'NEW_STUDY', data: { study: { id: s, name: studyName(s), code: `S-${s}` } }, user: 1 + (s % USERS), date: at(24 * s) };
    }
    const kinds = ['ASSAY_STATUS_CHANGED', 'ASSAY_TASK_ADDED', 'UPDATED_ASSAY', 'FILE_UPLOADED', 'NEW_COMMENT'];
    for (let a = 1; a <= assayCount; a++) {
      for (let k = 0; k < sz.activityPerAssay; k++) {
        const eventType = k === 0 ? 'NEW_ASSAY' : kinds[(a + k) % kinds.length];
        const data: Record<string, unknown> = { assay: { id: a, name: `Assay ${a}`, description: 'quoted "text", commas,\nand lines' } };
        if (eventType === 'ASSAY_STATUS_CHANGED') Object.assign(data, { oldStatus: 'IN_PLANNING', newStatus: 'NEEDS_ATTENTION' });
        if (eventType === 'ASSAY_TASK_ADDED') data.task = { id: taskId(a, 1, sz), label: 'Coat plate' };
        if (eventType === 'FILE_UPLOADED') data.file = { name: 'scan.tif', path: '/scans/scan.tif', url: null };
        yield { id: 20_000_000 + a * 100 + k, assay: a, eventType, data, user: 1 + ((a + k) % USERS), date: at(24 * a + k) };
      }
    }
    yield { id: 90_000_001, eventType: 'NEW_COLLABORATOR', data: { collaborator: { id: 1, label: 'Charles River' } }, user: 1, date: at(2) };
    yield { id: 90_000_002, eventType: 'NEW_USER', data: { user: { id: 2, displayName: 'Bob' } }, user: 1, date: at(3) };
    if (studyCount > 1) yield { id: 90_000_003, study: 1, eventType: 'STUDY_STATUS_CHANGED', data: { study: { id: 1 }, oldStatus: 'IN_PLANNING', newStatus: 'ACTIVE' }, user: 2, date: at(30) };
  });

  return {
    users,
    programs,
    drives: [
      { id: 1, displayName: 'Egnyte', driveType: 'EGNYTE', rootPath: '/Shared', details: { type: 'StorageDriveDetails.EgnyteDriveDetails' }, createdAt: at(0) },
      { id: 2, displayName: 'Local', driveType: 'LOCAL', rootPath: '/srv/data', details: { type: 'StorageDriveDetails.LocalDriveDetails' }, createdAt: at(0) },
    ],
    driveFolders: [
      { id: 1, drive: 1, name: 'PR1 folder', path: '/Shared/PR1', details: { type: 'StorageDriveFolderDetails.EgnyteFolderDetails', folderId: 'abc', webUrl: 'https://lab.egnyte.com/navigate/folder/abc' }, createdAt: at(1) },
      { id: 2, drive: 2, name: 'Study 1 data', path: '/srv/data/s1', details: { type: 'StorageDriveFolderDetails.LocalDriveFolderDetails', webUrl: null }, createdAt: at(1) },
      { id: 3, drive: 1, name: 'Study 1, "raw"', path: '/Shared/PR1/s1', details: { type: 'StorageDriveFolderDetails.EgnyteFolderDetails', folderId: 'def', webUrl: 'https://lab.egnyte.com/navigate/folder/def' }, createdAt: at(1) },
    ],
    programStorageFolders: [{ id: 1, parent: 1, folder: 1, primary: true }],
    studyStorageFolders: [{ id: 1, parent: 1, folder: 3, primary: true }, { id: 2, parent: 1, folder: 2, primary: false }],
    assayStorageFolders: [{ id: 1, parent: 1, folder: 3, primary: true }],
    elnFolders: [{ id: 1, name: 'Study 1 notebook', url: 'https://lab.benchling.com/folders/lib_1', path: '/PR1/s1', referenceId: 'lib_1' }],
    programNotebookFolders: [],
    studyNotebookFolders: [{ id: 1, parent: 1, folder: 1, primary: true }],
    assayNotebookFolders: [],
    gitGroups: [{ id: 1, displayName: 'oncology', webUrl: 'https://git.lab.example/oncology', createdAt: at(1) }],
    programGitGroups: [{ group: 1, program: 1 }],
    gitRepositories: [{ id: 1, group: 1, displayName: 'study-1-analysis', description: null, webUrl: 'https://git.lab.example/oncology/study-1-analysis', createdAt: at(2) }],
    studyGitRepositories: [{ repository: 1, study: 1 }],
    assayGitRepositories: [],
    assayTypes: [
      { id: 1, name: 'ELISA, quantitative', description: 'Sandwich ELISA "v2"', active: true },
      { id: 2, name: 'Generic', description: null, active: false },
    ],
    assayTypeFields: fields,
    assayTypeTasks: [
      { id: 1, assayType: 1, status: 'TODO', label: 'Coat plate, "overnight"', order: 1, createdAt: at(0) },
      { id: 2, assayType: 1, status: 'TODO', label: 'Read plate', order: 2, createdAt: at(0) },
    ],
    assayTypeTaskFields: [templateField(1, 1)],
    studies,
    links: [
      { id: 1, study: 1, label: 'Protocol, "final"', url: 'https://wiki.lab.example/protocols/1' },
      { id: 2, study: Math.min(2, studyCount), label: null, url: 'https://wiki.lab.example/2' },
    ],
    relationships: studyCount > 1 ? [{ id: 1, type: 'IS_PARENT_OF', source: 1, target: 2 }, { id: 2, type: 'IS_CHILD_OF', source: 2, target: 1 }] : [],
    conclusions: [{ id: 1, study: 1, text: '<p>It "works", mostly.</p>\n<p>Next: repeat.</p>', createdBy: 1, createdAt: at(50), updatedAt: at(60) }],
    comments: [
      { id: 1, study: 1, text: 'First comment, with "quotes"\nand a second line', createdBy: 2, createdAt: at(40), updatedAt: null },
      { id: 2, study: Math.min(2, studyCount), text: 'Looks good', createdBy: 3, createdAt: at(41), updatedAt: null },
    ],
    assays,
    tasks,
    taskFields,
    collaborators: [
      { id: 1, label: 'Charles River', code: 'CRL', organizationName: 'Charles River Laboratories, Inc.', organizationLocation: 'Wilmington, MA', contactPersonName: 'J. Doe', contactEmail: 'jdoe@crl.example', active: true },
      { id: 2, label: 'WuXi', code: null, organizationName: 'WuXi AppTec', active: false },
    ],
    keywords: [
      { id: 1, keyword: 'CRISPR', category: 'Technique' },
      { id: 2, keyword: 'BRCA1', category: 'Gene' },
      { id: 3, keyword: 'Toxicology', category: null },
    ],
    collections: [
      { id: 1, name: 'Shared picks, "2023"', description: 'For the review', shared: true, createdBy: 1, createdAt: at(70), updatedAt: null, studies: studyCount > 1 ? [1, 2] : [1] },
      { id: 2, name: 'My list', description: null, shared: false, createdBy: 2, createdAt: at(71), updatedAt: at(72), studies: [1] },
    ],
    activity,
  };
}

export const counts = (sz: Sizes) => {
  const studies = sz.programs * sz.studiesPerProgram;
  const assays = studies * sz.assaysPerStudy;
  return { programs: sz.programs, studies, assays, tasks: assays * sz.tasksPerAssay, activity: sz.programs + studies + assays * sz.activityPerAssay + 2 + (studies > 1 ? 1 : 0) };
};
