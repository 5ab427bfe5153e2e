// Secrets at rest (core/secrets.ts): AES-256-GCM with LABDATA_SECRET_KEY, or a key generated once
// into <dataDir>/secret.key; the CLI path without a key generates it there (mode 0600).
import t from 'tap';
import crypto from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { ConfigError, parseSecretKey } from '../../app/config.ts';
import { dataDirSecretKey, secretBoxFor } from '../../app/secret-key.ts';
import { decryptSecret, encryptSecret, SecretBox } from '../../core/secrets.ts';
import { createTestDatabase } from '../support/db.ts';
import { runCli, tempFile } from '../cli/labdata-cli.ts';

const key = crypto.randomBytes(32);

t.test('a sealed value opens with its key only, and never contains the plain text', async (t) => {
  const a = encryptSecret('s3cret-token', key);
  const b = encryptSecret('s3cret-token', key);
  t.not(a, b, 'a fresh IV each time');
  t.notMatch(a, 's3cret');
  t.equal(decryptSecret(a, key), 's3cret-token');
  t.throws(() => decryptSecret(a, crypto.randomBytes(32)), /cannot be decrypted/);
  const [v, iv, tag, data] = a.split('.');
  const flipped = Buffer.from(data, 'base64url');
  flipped[0] ^= 1;
  t.throws(() => decryptSecret([v, iv, tag, flipped.toString('base64url')].join('.'), key), /cannot be decrypted/, 'tampering is detected');
  t.throws(() => decryptSecret('plain', key), /not a sealed secret/);
});

t.test('SecretBox seals JSON values', async (t) => {
  const box = new SecretBox(() => key);
  const sealed = box.seal({ token: 'abc', n: 1 });
  t.same(box.open(sealed), { token: 'abc', n: 1 });
});

t.test('LABDATA_SECRET_KEY takes 32 bytes as base64 or hex; anything else is a configuration error', async (t) => {
  t.same(parseSecretKey(key.toString('base64')), key);
  t.same(parseSecretKey(key.toString('hex')), key);
  t.same(parseSecretKey(key.toString('base64url')), key);
  let error: unknown;
  try {
    parseSecretKey('too-short');
  } catch (err) {
    error = err;
  }
  t.ok(error instanceof ConfigError, 'a ConfigError (the CLI prints it as one line)');
  t.throws(() => secretBoxFor({ secretKey: Buffer.alloc(16).toString('base64'), dataDir: '/nowhere' }), /LABDATA_SECRET_KEY must be 32 bytes/);
});

t.test('without a key, one is generated into the data dir once (mode 0600) and reused', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'labdata-secret-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const box = secretBoxFor({ secretKey: undefined, dataDir: join(dir, 'data') });
  const sealed = box.seal('x');
  const file = join(dir, 'data', 'secret.key');
  t.equal(statSync(file).mode & 0o777, 0o600);
  const first = readFileSync(file, 'utf8');
  t.same(dataDirSecretKey(join(dir, 'data')), parseSecretKey(first));
  t.equal(secretBoxFor({ secretKey: undefined, dataDir: join(dir, 'data') }).open(sealed), 'x', 'a later start reads the same key');
  t.equal(readFileSync(file, 'utf8'), first, 'not regenerated');
});

t.test('the CLI refuses a malformed LABDATA_SECRET_KEY with one line', async (t) => {
  const res = await runCli(['migrate'], { LABDATA_DATABASE_URL: await createTestDatabase(t), LABDATA_SECRET_KEY: 'nope' });
  t.not(res.code, 0);
  t.equal(res.reasons.length, 1);
  t.match(res.reasons[0], /LABDATA_SECRET_KEY must be 32 bytes/);
});

t.test('bootstrap without LABDATA_SECRET_KEY seals credentials with <dataDir>/secret.key', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'labdata-secret-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const databaseUrl = await createTestDatabase(t);
  const file = await tempFile({
    organizations: [{ ref: 'acme', name: 'Acme' }],
    integrations: [{ ref: 'eln', organization: 'acme', type: 'ELN_A', name: 'N', settings: {}, credentials: { token: 'plain-token-42' } }],
  });
  const res = await runCli(['bootstrap', file], {
    LABDATA_DATABASE_URL: databaseUrl,
    LABDATA_DATA_DIR: dir,
    LABDATA_SECRET_KEY: undefined,
    LABDATA_PLUGINS: 'users,integrations',
  });
  t.equal(res.code, 0, res.stderr);
  t.notMatch(res.stdout + res.stderr, 'plain-token-42', 'never printed nor logged');
  const keyFile = join(dir, 'secret.key');
  t.equal(statSync(keyFile).mode & 0o777, 0o600);
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const { rows } = await client.query('select credentials from integration');
  await client.end();
  t.notMatch(rows[0].credentials, 'plain-token-42');
  t.same(JSON.parse(decryptSecret(rows[0].credentials, parseSecretKey(readFileSync(keyFile, 'utf8')))), { token: 'plain-token-42' });
});
