import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import t from 'tap';
import { HttpGitProvider } from '../../../plugins/git/http-provider.ts';
import { LocalGitProvider } from '../../../plugins/git/local-provider.ts';
import { GitProviderError } from '../../../plugins/git/provider.ts';
import { startGitlabStub } from '../../support/stubs/gitlab.ts';

const git = promisify(execFile);

t.test('HTTP provider: speaks the GitLab-style API with the integration token', async (t) => {
  const stub = await startGitlabStub(t, 'secret-token');
  const group = stub.addGroup('lab');
  const provider = new HttpGitProvider({ baseUrl: stub.url + '/', token: 'secret-token' });

  t.equal(await provider.groupExists('lab'), true);
  t.equal(await provider.groupExists(String(group.id)), true, 'by numeric id too');
  t.equal(await provider.groupExists('nope'), false);
  t.same(stub.calls('GET').map((r) => r.path), ['/api/v4/groups/lab', `/api/v4/groups/${group.id}`, '/api/v4/groups/nope']);
  for (const r of stub.requests) t.equal(r.headers['private-token'], 'secret-token');

  t.equal(await provider.findRepository('lab', 'assay-1'), null);
  const repo = await provider.createRepository('lab', 'assay-1', { description: 'Assay 1' });
  t.match(repo, { name: 'assay-1', url: `${stub.url}/lab/assay-1.git` });
  const post = stub.calls('POST', '/api/v4/projects');
  t.equal(post.length, 1);
  t.same(post[0].body, { name: 'assay-1', path: 'assay-1', namespace_id: group.id, description: 'Assay 1' });
  t.equal(post[0].headers['content-type'], 'application/json');

  const search = stub.calls('GET', '/api/v4/groups/lab/projects');
  t.equal(search[0].query.search, 'assay-1');
  t.same(await provider.findRepository('lab', 'assay-1'), repo, 'found again by exact path');
  stub.projects.push({ id: 999, name: 'assay-10', path: 'assay-10', namespaceId: group.id, description: null });
  t.same(await provider.findRepository('lab', 'assay-1'), repo, 'a longer name that contains it is not a match');
});

t.test('HTTP provider: a name already taken is adopted, not duplicated', async (t) => {
  const stub = await startGitlabStub(t);
  stub.addGroup('lab');
  const provider = new HttpGitProvider({ baseUrl: stub.url, token: stub.token });
  const first = await provider.createRepository('lab', 'study-x');
  const second = await provider.createRepository('lab', 'study-x');
  t.same(second, first);
  t.equal(stub.projects.length, 1);
});

t.test('HTTP provider: a missing group on create is GROUP_NOT_FOUND and nothing is posted', async (t) => {
  const stub = await startGitlabStub(t);
  const provider = new HttpGitProvider({ baseUrl: stub.url, token: stub.token });
  const err = await provider.createRepository('gone', 'x').catch((e) => e);
  t.ok(err instanceof GitProviderError);
  t.equal(err.failure, 'GROUP_NOT_FOUND');
  t.equal(stub.calls('POST').length, 0);
});

t.test('HTTP provider: vendor failures become typed errors', async (t) => {
  const stub = await startGitlabStub(t);
  stub.addGroup('lab');
  const provider = new HttpGitProvider({ baseUrl: stub.url, token: stub.token, timeoutMs: 200 });

  stub.fail(500);
  let err = await provider.groupExists('lab').catch((e) => e);
  t.match(err, { failure: 'UNAVAILABLE', message: /500/ });

  stub.recover();
  stub.down = true;
  err = await provider.groupExists('lab').catch((e) => e);
  t.match(err, { failure: 'UNAVAILABLE', message: /could not be reached/ });

  stub.recover();
  stub.hang = true;
  err = await provider.groupExists('lab').catch((e) => e);
  t.match(err, { failure: 'TIMEOUT' });

  stub.recover();
  const wrongToken = new HttpGitProvider({ baseUrl: stub.url, token: 'wrong' });
  err = await wrongToken.groupExists('lab').catch((e) => e);
  t.match(err, { failure: 'REJECTED', message: /credentials/ });

  stub.fail(500, 1);
  err = await provider.groupExists('lab').catch((e) => e);
  t.match(err, { failure: 'UNAVAILABLE' });
  t.equal(await provider.groupExists('lab'), true, 'recovers after the failure');
});

t.test('LOCAL provider: bare repositories under the root path', async (t) => {
  const root = await mkdtemp(path.join(tmpdir(), 'labdata-git-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  await mkdir(path.join(root, 'lab', 'imaging'), { recursive: true });
  const provider = new LocalGitProvider({ rootPath: root });

  t.equal(await provider.groupExists('lab'), true);
  t.equal(await provider.groupExists('lab/imaging'), true, 'nested groups');
  t.equal(await provider.groupExists('missing'), false);
  for (const bad of ['../etc', '/tmp', 'lab/../..', '', 'lab//imaging', '.hidden']) {
    t.equal(await provider.groupExists(bad), false, `${JSON.stringify(bad)} never leaves the root`);
  }

  t.equal(await provider.findRepository('lab/imaging', 'study-1'), null);
  const repo = await provider.createRepository('lab/imaging', 'study-1');
  const dir = path.join(root, 'lab', 'imaging', 'study-1.git');
  t.same(repo, { id: 'lab/imaging/study-1', name: 'study-1', url: `file://${dir}` });
  t.equal(fileURLToPath(repo.url), dir);
  const { stdout } = await git('git', ['--git-dir', dir, 'rev-parse', '--is-bare-repository']);
  t.equal(stdout.trim(), 'true', 'git recognises a bare repository');

  t.same(await provider.findRepository('lab/imaging', 'study-1'), repo);
  t.same(await provider.createRepository('lab/imaging', 'study-1'), repo, 'creating again returns the same one');

  // The repository is usable: a clone of it works.
  const clone = path.join(root, 'clone');
  await git('git', ['clone', '--quiet', repo.url, clone]);
  const { stdout: remote } = await git('git', ['-C', clone, 'remote', 'get-url', 'origin']);
  t.equal(remote.trim(), repo.url);
});

t.test('LOCAL provider: a missing group or unsafe name is GROUP_NOT_FOUND, and nothing is made', async (t) => {
  const root = await mkdtemp(path.join(tmpdir(), 'labdata-git-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  const provider = new LocalGitProvider({ rootPath: root });
  t.match(await provider.createRepository('missing', 'x').catch((e) => e), { failure: 'GROUP_NOT_FOUND' });
  await mkdir(path.join(root, 'lab'));
  t.match(await provider.createRepository('lab', '../escape').catch((e) => e), { failure: 'GROUP_NOT_FOUND' });
  t.match(await provider.createRepository('..', 'x').catch((e) => e), { failure: 'GROUP_NOT_FOUND' });
});
