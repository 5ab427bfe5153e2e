import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { provisionDemo } from '../../../app/cli/demo.ts';
import type { Runtime } from '../../../app/runtime.ts';
import { startTestServer } from '../../support/server.ts';

// The embedded default demonstrates Git with no outside service: the demo organization gets a
// LOCAL integration over `<dataDir>/git` with a `demo` group, usable at once.
const git = promisify(execFile);
const dataDir = await mkdtemp(path.join(tmpdir(), 'labdata-demo-'));
t.teardown(() => rm(dataDir, { recursive: true, force: true }));
const server = await startTestServer(t, { plugins: ['users', 'projects', 'studies', 'integrations', 'git'] });
const runtime = { orm: server.orm, kernel: server.kernel, config: { ...server.kernel.services.config, dataDir } } as unknown as Runtime;

t.test('the demo organization can create repositories in the local demo group', async (t) => {
  const demo = await provisionDemo(runtime);
  t.ok(demo?.key);
  const k = { key: demo!.key };
  const list = await server.get('/api/v1/integrations', k);
  t.equal(list.status, 200);
  const integration = list.body.content.find((i: { type: string }) => i.type === 'GIT');
  t.match(integration, { name: 'Local Git (demo)' });

  const project = await server.post('/api/v1/projects', { code: 'D', name: 'Demo', description: 'd', defaultGitGroup: { integrationId: integration.id, groupId: 'demo' } }, k);
  t.equal(project.status, 201, project.text);
  const study = (await server.post('/api/v1/studies', { projectId: project.body.id, name: 'First study' }, k)).body;
  const repo = await server.post(`/api/v1/studies/${study.id}/git-repository`, undefined, k);
  t.equal(repo.status, 201, repo.text);
  const dir = path.join(dataDir, 'git', 'demo', `${repo.body.name}.git`);
  t.equal(repo.body.url, `file://${dir}`);
  const { stdout } = await git('git', ['--git-dir', dir, 'rev-parse', '--is-bare-repository']);
  t.equal(stdout.trim(), 'true');
});
