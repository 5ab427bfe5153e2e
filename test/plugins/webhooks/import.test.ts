// A Study Tracker import (plugins/study-tracker) with a subscription in place: the records it
// moves in are history (`labdata.history`), so none of their activity is delivered as new; the
// change feed has them all, in the position of the import's commit.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createProject, startTestServer } from '../../support/server.ts';
import { runCliInProcess } from '../../cli/labdata-cli.ts';
import { writeExport } from '../study-tracker/st-export.ts';
import { generate, SMALL } from '../study-tracker/generate.ts';
import { Receiver } from './receiver.ts';

const server = await startTestServer(t, { jobs: true, env: { LABDATA_WEBHOOK_ALLOW_PRIVATE: 'true' } });
const org = await server.organization('Moving in');
const admin = await server.admin(org);
const receiver = await Receiver.start(t);

t.test('imported history reaches the change feed, never a webhook', async (t) => {
  const hook = await server.post('/api/v1/webhooks', { url: receiver.url }, { key: admin.key });
  t.equal(hook.status, 201);
  const dir = mkdtempSync(join(tmpdir(), 'labdata-st-hooks-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  await writeExport(dir, generate(SMALL), '1.0.2');
  const imported = await runCliInProcess(['import', 'study-tracker', dir, '--organization', org], { LABDATA_DATABASE_URL: server.databaseUrl });
  t.equal(imported.code, 0, imported.stderr);
  const history = (await server.sql<{ id: string }>(`select id from activity where organization_id = ? and event_type <> 'webhook.created'`, [org])).map((r) => r.id);
  t.ok(history.length > 20, `${history.length} activity records moved in`);

  // A change made after the import: once it is delivered, the import's would have been too.
  const project = await createProject(server, admin, 'PUBLIC');
  await receiver.waitFor(() => receiver.received.some((r) => r.json.data.projectId === project.id), 15_000, 'the change after the import');
  const delivered = new Set(receiver.received.map((r) => r.json.data.id));
  t.same(history.filter((id) => delivered.has(id)), [], 'no imported record was delivered');

  const fed = new Set<string>();
  let cursor = '0';
  for (let i = 0; i < 50; i++) {
    const page = (await server.get(`/api/v1/activity/changes?after=${cursor}&size=1000&wait=2`, { key: admin.key })).body;
    for (const item of page.items) fed.add(item.id);
    cursor = page.nextCursor;
    if (fed.has((await server.sql<{ id: string }>(`select id from activity where project_id = ? and event_type = 'project.created'`, [project.id]))[0].id)) break;
  }
  t.same(history.filter((id) => !fed.has(id)), [], 'the change feed has every imported record');
});
