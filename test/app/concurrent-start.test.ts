// Processes starting together, as an orchestrator or an operator's script starts them: several
// servers and admin commands on one fresh database or data dir. Each step they all take (create
// the database, write the certificate, provision the demo) must come out once, and no process
// may fail for having been second.
import t from 'tap';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createDatabaseIfMissing } from '../../app/db/create-database.ts';
import { ensureCertificate } from '../../app/tls.ts';
import { provisionDemo } from '../../app/cli/demo.ts';
import type { Runtime } from '../../app/runtime.ts';
import { startTestServer, testConfig } from '../support/server.ts';

const tempDir = async () => {
  const dir = await mkdtemp(join(tmpdir(), 'labdata-together-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
};

t.test('six processes creating the same missing database: all go on, it exists once', async (t) => {
  const admin = process.env.LABDATA_TEST_ADMIN_URL!;
  const name = `t_${randomBytes(8).toString('hex')}`;
  const url = new URL(admin);
  url.pathname = `/${name}`;
  const client = new pg.Client({ connectionString: admin });
  await client.connect();
  t.teardown(async () => {
    await client.query(`drop database if exists ${name} with (force)`);
    await client.end();
  });
  const told: string[] = [];
  const results = await Promise.allSettled(Array.from({ length: 6 }, () => createDatabaseIfMissing(url.toString(), (db) => told.push(db))));
  t.same(results.map((r) => r.status), Array(6).fill('fulfilled'), 'none fails');
  t.ok(told.length >= 1 && told.every((db) => db === name), 'those that found it missing said which one');
  t.same((await client.query('select count(*)::int as n from pg_database where datname = $1', [name])).rows, [{ n: 1 }]);
  const again: string[] = [];
  await createDatabaseIfMissing(url.toString(), (db) => again.push(db));
  t.same(again, [], 'once there, nothing is said');
});

t.test('servers sharing a fresh data dir generate its certificate once and all serve that one', async (t) => {
  const dir = await tempDir();
  const pairs = await Promise.all(Array.from({ length: 4 }, () => ensureCertificate(dir)));
  const onDisk = await readFile(join(dir, 'tls', 'cert.pem'), 'utf8');
  t.ok(pairs.every((p) => p.cert === onDisk), 'each one has the certificate on disk');
  t.ok(pairs.every((p) => p.key === pairs[0].key), 'and its key');
  t.equal((await stat(join(dir, 'tls', 'key.pem'))).mode & 0o777, 0o600, 'the key is private');
  t.same((await readdir(dir)).sort(), ['tls'], 'nothing left aside');
  t.same(await ensureCertificate(dir), pairs[0], 'the next start reads it');
});

t.test('servers starting together on a fresh embedded database provision the demo once', async (t) => {
  const server = await startTestServer(t, { plugins: ['users'] });
  const runtime = { config: testConfig({ LABDATA_DATA_DIR: await tempDir() }), orm: server.orm, kernel: server.kernel } as Runtime;
  const demos = await Promise.all(Array.from({ length: 3 }, () => provisionDemo(runtime)));
  t.equal(demos.filter(Boolean).length, 1, 'one of them provisions it and prints its key');
  t.same(await server.sql('select name from organization'), [{ name: 'Demo Lab' }], 'one organization');
  t.same(await server.sql('select email from app_user'), [{ email: 'admin@demo.lab' }], 'one admin');
});
