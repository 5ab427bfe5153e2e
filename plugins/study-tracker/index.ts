import { definePlugin } from '../../core/public.ts';
import { events } from './events.ts';
import { importStudyTracker } from './importer.ts';
import { migrations } from './migrations.ts';

/**
 * Moves a lab in from Study Tracker: `labdata import study-tracker PATH --organization ORG_ID`
 * reads its admin data export (folder or .zip) whole, checks it, and writes it in one
 * transaction; run again, it creates only what is new and updates what changed
 * (docs/import-study-tracker.md). No routes: it is an operator's command.
 */
export default definePlugin({
  name: 'study-tracker',
  version: '1.0.0',
  description: 'Imports Study Tracker data exports (labdata import study-tracker)',
  dependsOn: [
    'users', 'projects', 'studies', 'assay-types', 'assays', 'tasks', 'notes', 'external-links',
    'keywords', 'collaborators', 'study-collections', 'study-relationships',
  ],
  migrations,
  events,
  importers: {
    'study-tracker': {
      description: 'A Study Tracker data export (one CSV per table, as its DataExportService writes it): its folder or a .zip of it',
      run: (ctx) => importStudyTracker(ctx),
    },
  },
});
